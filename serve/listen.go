package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// MaxUnixPath is the longest Unix socket path, in bytes: Linux's
// sun_path holds 108 bytes, the last a NUL.
const MaxUnixPath = 107

// DefaultSocketMode is the mode of the socket file ListenUnix creates:
// only its owner may connect.
const DefaultSocketMode os.FileMode = 0o600

// ListenUnix listens on a Unix socket at path with DefaultSocketMode; see
// ListenUnixMode.
func ListenUnix(path string) (net.Listener, error) {
	return ListenUnixMode(path, DefaultSocketMode)
}

// ListenUnixMode listens on a Unix socket at path whose file has the
// given permission bits (connecting needs write permission: 0600 admits
// the owner only, 0660 the file's group too), replacing a stale socket
// file (one nobody accepts on) but refusing to touch anything else. A
// path longer than MaxUnixPath bytes, or in a directory that does not
// exist, is an error that says so (the system's own is "invalid
// argument" or "no such file or directory" for a file nobody named).
//
// The socket is never connectable with looser permissions, whatever the
// umask: it is bound inside a fresh directory of mode 0700 beside path,
// given its mode there, and only then renamed into place. (Setting the
// umask around bind would be as safe for this socket, but the umask is
// the process's: a file another goroutine creates meanwhile would get it.
// Chmod after bind leaves a window in which anyone may connect.) Closing
// the listener removes the socket file, if it is still this one.
func ListenUnixMode(path string, mode os.FileMode) (net.Listener, error) {
	if mode&^os.ModePerm != 0 {
		return nil, fmt.Errorf("serve: socket mode %#o has bits beyond the permissions", uint32(mode))
	}
	if len(path) > MaxUnixPath {
		return nil, fmt.Errorf("serve: socket path %s is %d bytes, longer than the %d a Unix socket address holds; use a shorter path (e.g. in /tmp)", path, len(path), MaxUnixPath)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("serve: socket %s: directory %s: %w", path, dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("serve: socket %s: %s is not a directory", path, dir)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("serve: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("serve: %s: a server is already listening there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("serve: removing stale socket: %w", err)
		}
	}
	private, err := os.MkdirTemp(dir, ".ss")
	if err != nil {
		return nil, fmt.Errorf("serve: socket %s: private directory for binding: %w", path, err)
	}
	defer os.RemoveAll(private)
	tmp := filepath.Join(private, "s")
	if len(tmp) > MaxUnixPath {
		return nil, fmt.Errorf("serve: socket path %s: binding needs %s, %d bytes, longer than the %d a Unix socket address holds; use a shorter directory", path, tmp, len(tmp), MaxUnixPath)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	// The bound name is tmp; path is removed by our Close instead.
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		ln.Close()
		return nil, fmt.Errorf("serve: socket %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return &unixListener{UnixListener: ln, path: path, file: fi}, nil
}

// unixListener is a Unix listener bound elsewhere and renamed to path: it
// reports path as its address and removes it on Close.
type unixListener struct {
	*net.UnixListener
	path string
	file os.FileInfo // the socket file, to leave a successor's alone
	once sync.Once
}

func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.file) {
			os.Remove(l.path)
		}
	})
	return err
}

// ErrNotLoopback is returned by ListenTCP for an address other than a
// loopback one: the token (Config.Token) is sent in the clear.
var ErrNotLoopback = errors.New("serve: TCP address is not loopback")

// ListenTCP listens on a loopback TCP address (127.0.0.1:PORT,
// [::1]:PORT, localhost:PORT).
func ListenTCP(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("serve: TCP address %q: %w", addr, err)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%w: %q (use 127.0.0.1:PORT)", ErrNotLoopback, addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w: %q resolved to %v", ErrNotLoopback, addr, ta.IP)
	}
	return ln, nil
}
