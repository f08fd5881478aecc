package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// MaxUnixPath is the longest Unix socket path, in bytes: Linux's
// sun_path holds 108 bytes, the last a NUL.
const MaxUnixPath = 107

// ListenUnix listens on a Unix socket at path, replacing a stale socket
// file (one nobody accepts on) but refusing to touch anything else. A
// path longer than MaxUnixPath bytes, or in a directory that does not
// exist, is an error that says so (the system's own is "invalid
// argument" or "no such file or directory" for a file nobody named).
func ListenUnix(path string) (net.Listener, error) {
	if len(path) > MaxUnixPath {
		return nil, fmt.Errorf("serve: socket path %s is %d bytes, longer than the %d a Unix socket address holds; use a shorter path (e.g. in /tmp)", path, len(path), MaxUnixPath)
	}
	if dir := filepath.Dir(path); dir != "" {
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("serve: socket %s: directory %s: %w", path, dir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("serve: socket %s: %s is not a directory", path, dir)
		}
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
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return ln, nil
}

// ErrNotLoopback is returned by ListenTCP for an address other than a
// loopback one: the protocol has no authentication.
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
