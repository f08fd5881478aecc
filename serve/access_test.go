package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
)

// TestSocketMode: the socket file has the asked mode (0600 by default)
// whatever the umask, the listener reports the path asked for, and Close
// removes the file but not a successor's.
func TestSocketMode(t *testing.T) {
	old := syscall.Umask(0) // the loosest umask: a plain bind makes 0777
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, mode := range []os.FileMode{DefaultSocketMode, 0o660, 0o666} {
		path := filepath.Join(dir, "s"+strconv.FormatUint(uint64(mode), 8)+".sock")
		var ln net.Listener
		var err error
		if mode == DefaultSocketMode {
			ln, err = ListenUnix(path)
		} else {
			ln, err = ListenUnixMode(path, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != mode {
			t.Errorf("socket file mode %v, want socket %#o", fi.Mode(), mode)
		}
		if got := ln.Addr().String(); got != path {
			t.Errorf("listener address %q, want %q", got, path)
		}
		nc, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("owner cannot connect: %v", err)
		}
		nc.Close()
		ln.Close()
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("socket file left after Close: %v", err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left in the directory: %v", entries)
	}
	if _, err := ListenUnixMode(filepath.Join(dir, "x.sock"), os.ModeSetuid|0o600); err == nil {
		t.Error("a mode beyond the permission bits was accepted")
	}
	// A successor's socket at the same path survives the first's Close.
	path := filepath.Join(dir, "s.sock")
	l1, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	l2, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	l1.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("closing the old listener removed the new one's socket: %v", err)
	}
	l2.Close()
}

func tokenServer(t *testing.T, token string) *Server {
	t.Helper()
	return newTestServer(t, Config{
		Sampler: &refSampler{g: randomCSR(100, 4, 11)}, Token: []byte(token),
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(100, 1), Fanouts: []int{2}}, BatchSize: 8},
	})
}

// refusedAndClosed sends frame as the first request of a new connection
// and checks it is answered CodeUnauthorized, with its id, and closed.
func refusedAndClosed(t *testing.T, network, addr string, frame []byte) {
	t.Helper()
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write(frame)
	f, _, err := ReadFrame(nc, MaxReply, nil)
	if err != nil {
		t.Fatalf("no refusal: %v", err)
	}
	if e := DecodeError(f.Payload); f.Status != StatusError || e.Code != CodeUnauthorized || f.ID != 42 {
		t.Fatalf("reply %+v %v, want unauthorized with id 42", f, e)
	}
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("connection not closed after the refusal: %v", err)
	}
}

// TestTokenRequired: with a token, a TCP (and Unix) connection whose
// first request is not a hello with the token is answered unauthorized
// and closed; with it, the connection works. Without a token, TCP is
// refused outright, and a hello is harmless.
func TestTokenRequired(t *testing.T) {
	s := tokenServer(t, "s3cret")
	ln, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	addr := ln.Addr().String()
	sock := serveUnix(t, s)
	for _, l := range []struct{ network, addr string }{{"tcp", addr}, {"unix", sock}} {
		refusedAndClosed(t, l.network, l.addr, AppendFrame(nil, OpEpochInfo, 0, 42, nil))
		refusedAndClosed(t, l.network, l.addr, AppendFrame(nil, OpHello, 0, 42, []byte("s3cret!")))
		refusedAndClosed(t, l.network, l.addr, AppendFrame(nil, OpHello, 0, 42, []byte("s3cre")))
		refusedAndClosed(t, l.network, l.addr, AppendFrame(nil, OpHello, 0, 42, make([]byte, MaxToken+1)))
		if _, err := Dial(l.network, l.addr); err != nil {
			t.Fatal(err) // connecting is not refused; requests are
		}
		var re *RemoteError
		if _, err := DialToken(l.network, l.addr, []byte("wrong")); !errors.As(err, &re) || re.Code != CodeUnauthorized {
			t.Fatalf("%s: DialToken with a wrong token: %v", l.network, err)
		}
		c, err := DialToken(l.network, l.addr, []byte("s3cret"))
		if err != nil {
			t.Fatalf("%s: %v", l.network, err)
		}
		if b, err := c.NextBatch(CurrentEpoch); err != nil || b.End {
			t.Fatalf("%s: authenticated next_batch: %v %v", l.network, b, err)
		}
		c.Close()
	}

	open := newTestServer(t, Config{
		Sampler: &refSampler{g: randomCSR(100, 4, 11)},
		Config:  pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(100, 1), Fanouts: []int{2}}, BatchSize: 8},
	})
	ln2, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Serve(ln2); !errors.Is(err, ErrNoToken) {
		t.Fatalf("Serve(TCP) without a token: %v, want ErrNoToken", err)
	}
	if nc, err := net.Dial("tcp", ln2.Addr().String()); err == nil {
		nc.Close()
		t.Fatal("the refused TCP listener still accepts")
	}
	c, err := DialToken("unix", serveUnix(t, open), []byte("anything"))
	if err != nil {
		t.Fatalf("hello to a server without a token: %v", err)
	}
	if _, err := c.EpochInfo(); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// otherUserEnv names the socket a re-executed test binary connects to as
// another user (TestOtherUserCannotConnect).
const otherUserEnv = "STREAMSAMPLER_TEST_CONNECT_AS_OTHER"

// TestMain runs the child of TestOtherUserCannotConnect: it tries to
// connect and exits 0 on success, 13 on EACCES, 1 otherwise.
func TestMain(m *testing.M) {
	if path := os.Getenv(otherUserEnv); path != "" {
		nc, err := net.Dial("unix", path)
		switch {
		case err == nil:
			nc.Close()
			os.Exit(0)
		case errors.Is(err, syscall.EACCES):
			os.Exit(13)
		default:
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// TestOtherUserCannotConnect: a process of another uid (nobody) cannot
// connect to a default (0600) socket, in a directory it may search; with
// --socket-mode 0666 it can, which shows the child really tries.
func TestOtherUserCannotConnect(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user (uid 65534)")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "ss-uid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The test binary, where nobody may run it (go test's build
	// directory is private).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "serve.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	connectAsNobody := func(path string) int {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), otherUserEnv+"="+path)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() == 1 {
				t.Logf("child: %s", strings.TrimSpace(string(out)))
			}
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("running the child as uid %d: %v", nobody, err)
		}
		return 0
	}
	for _, tc := range []struct {
		mode os.FileMode
		want int
	}{{DefaultSocketMode, 13}, {0o666, 0}} {
		path := filepath.Join(dir, "s"+strconv.FormatUint(uint64(tc.mode), 8)+".sock")
		ln, err := ListenUnixMode(path, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		s := tokenlessServer(t)
		go s.Serve(ln)
		if got := connectAsNobody(path); got != tc.want {
			t.Errorf("socket mode %#o: uid %d's connect exited %d, want %d (0 connected, 13 EACCES)", tc.mode, nobody, got, tc.want)
		}
		s.Shutdown(context.Background())
	}
}

func tokenlessServer(t *testing.T) *Server {
	t.Helper()
	return tokenServer(t, "")
}

// TestHelloBytes pins docs/PROTOCOL.md's hello example (also in
// python/tests/test_protocol.py).
func TestHelloBytes(t *testing.T) {
	want := append([]byte{0x0c, 0, 0, 0, 5, 0, 1, 0, 0, 0}, "s3cret"...)
	if got := AppendFrame(nil, OpHello, StatusOK, 1, []byte("s3cret")); string(got) != string(want) {
		t.Fatalf("hello frame % x, want % x", got, want)
	}
}
