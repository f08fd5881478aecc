package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/serve"
	"github.com/streamsampler/streamsampler/walk"
)

// TestServeCommand runs `streamsampler serve` on a graph directory, pulls
// two epochs over the socket, checks them against the reference sampler,
// and stops the server with SIGTERM.
func TestServeCommand(t *testing.T) {
	dir, csr := testGraph(t, 500, 6, 4096)
	var train []uint32
	for v := uint32(0); v < 500; v += 3 {
		train = append(train, v)
	}
	trainFile := writeTrain(t, train)
	sock := filepath.Join(t.TempDir(), "ss.sock")
	pr, pw := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- execute([]string{"serve", "--graph", dir, "--train", trainFile, "--fanouts", "5,3",
			"--batch-size", "32", "--seed", "11", "--socket", sock, "--quiet", "--rank", "1", "--world-size", "2"},
			strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready unix:"+sock) {
		t.Fatalf("first line %q, want ready", lines.Text())
	}
	go io.Copy(io.Discard, pr)

	c, err := serve.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for e := uint32(0); e < 2; e++ {
		shard, _ := epoch.Shard(train, 1, 2, 11, e)
		ref, err := host.Reference(csr, shard, []int{5, 3}, epoch.Key{Seed: 11, Epoch: e})
		if err != nil {
			t.Fatal(err)
		}
		want := epoch.Batches(shard, 32, 11, e)
		want = want[:epoch.NumBatches(len(train)/2, 32)]
		for i := 0; ; i++ {
			b, err := c.NextBatch(e)
			if err != nil {
				t.Fatal(err)
			}
			if b.End {
				if i != len(want) {
					t.Fatalf("epoch %d ended after %d batches, want %d", e, i, len(want))
				}
				break
			}
			wb, _ := ref.Assemble(want[i], epoch.DGL)
			if b.Index != i || !reflect.DeepEqual(b.Blocks, wb) {
				t.Fatalf("epoch %d batch %d differs from the reference", e, i)
			}
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit status %d after SIGTERM", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket file left behind: %v", err)
	}
}

func TestServeUsage(t *testing.T) {
	dir, _ := testGraph(t, 50, 3, 4096)
	train := writeTrain(t, []uint32{1, 2, 3})
	sock := filepath.Join(t.TempDir(), "s.sock")
	tokenFile := filepath.Join(t.TempDir(), "token")
	emptyToken := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	os.WriteFile(emptyToken, []byte(" \n"), 0o600)
	base := []string{"serve", "--graph", dir, "--train", train, "--fanouts", "2"}
	t.Setenv(tokenEnv, "") // as if unset
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--train", train, "--fanouts", "2", "--socket", sock}, 2, "--graph"},
		{append(base[:5:5], "--socket", sock), 2, "--fanouts"},
		{base, 2, "--socket or --tcp"},
		{append(base, "--tcp", "0.0.0.0:0", "--token-file", tokenFile), 2, "not loopback"},
		{append(base, "--tcp", "127.0.0.1:0"), 2, "--tcp needs a token"},
		{append(base, "--tcp", "127.0.0.1:0", "--token-file", emptyToken), 2, "the token is empty"},
		{append(base, "--tcp", "127.0.0.1:0", "--token-file", filepath.Join(dir, "nope")), 1, "--token-file"},
		{append(base, "--socket", sock, "--max-request", "0"), 2, "--max-request 0"},
		{append(base, "--socket", sock, "--max-request", "-1"), 2, "--max-request -1"},
		{append(base, "--socket", sock, "--max-inflight", "lots"), 2, "--max-inflight"},
		{append(base, "--socket", sock, "--max-inflight", "0"), 2, "--max-inflight"},
		{append(base, "--socket", sock, "--max-inflight", "1MiB"), 2, "in-flight budget"},
		{append(base, "--socket", sock, "--socket-mode", "0400"), 2, "--socket-mode"},
		{append(base, "--socket", sock, "--socket-mode", "0999"), 2, "--socket-mode"},
		{append(base, "--socket", sock, "--socket-mode", "01777"), 2, "--socket-mode"},
		{append(base, "--socket", sock, "--prepare-at", "1.5"), 2, "--prepare-at"},
		{append(base, "--socket", sock, "--stall-timeout", "-1s"), 2, "--stall-timeout"},
		{append(base, "--socket", sock, "--walk-timeout", "-1s"), 2, "--walk-timeout"},
		{append(base, "--socket", sock, "--max-walk-length", "0"), 2, "--max-walk-length"},
		{append(base, "--socket", sock, "--rank", "2", "--world-size", "2"), 2, "rank 2"},
		{append(base, "--socket", sock, "--world-size", "5"), 2, "3 training nodes for 5 ranks"},
		{[]string{"serve", "--graph", filepath.Join(dir, "nope"), "--train", train, "--fanouts", "2", "--socket", sock}, 1, "nope"},
	} {
		var stderr strings.Builder
		code := execute(tc.args, strings.NewReader(""), io.Discard, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args[1:], code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestServeAccess: --socket-mode sets the socket file's mode; --tcp with
// a token (--token-file, or $STREAMSAMPLER_TOKEN) refuses a client without
// it and serves one with it, on the socket too.
func TestServeAccess(t *testing.T) {
	dir, _ := testGraph(t, 100, 4, 4096)
	train := writeTrain(t, []uint32{1, 2, 3, 4, 5, 6, 7, 8})
	for _, viaEnv := range []bool{false, true} {
		sock := filepath.Join(t.TempDir(), "ss.sock")
		args := []string{"serve", "--graph", dir, "--train", train, "--fanouts", "2", "--batch-size", "2",
			"--socket", sock, "--socket-mode", "0660", "--tcp", "127.0.0.1:0", "--quiet"}
		if viaEnv {
			t.Setenv(tokenEnv, " s3cret\n")
		} else {
			tokenFile := filepath.Join(t.TempDir(), "token")
			os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
			args = append(args, "--token-file", tokenFile)
		}
		pr, pw := io.Pipe()
		exit := make(chan int, 1)
		var stderr strings.Builder
		go func() {
			exit <- execute(args, strings.NewReader(""), pw, &stderr)
			pw.Close()
		}()
		lines := bufio.NewScanner(pr)
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready unix:"+sock) {
			t.Fatalf("first line %q, want ready (stderr %q)", lines.Text(), stderr.String())
		}
		var tcp string
		for _, w := range strings.Fields(lines.Text()) {
			if a, ok := strings.CutPrefix(w, "tcp:"); ok {
				tcp = a
			}
		}
		go io.Copy(io.Discard, pr)
		if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o660 {
			t.Fatalf("socket file: %v %v, want mode 0660", fi.Mode(), err)
		}
		for _, l := range []struct{ network, addr string }{{"tcp", tcp}, {"unix", sock}} {
			c, err := serve.Dial(l.network, l.addr)
			if err != nil {
				t.Fatal(err)
			}
			var re *serve.RemoteError
			if _, err := c.EpochInfo(); !errors.As(err, &re) || re.Code != serve.CodeUnauthorized {
				t.Errorf("%s without the token: %v, want unauthorized", l.network, err)
			}
			c.Close()
			c, err = serve.DialToken(l.network, l.addr, []byte("s3cret"))
			if err != nil {
				t.Fatalf("%s with the token: %v", l.network, err)
			}
			if b, err := c.NextBatch(serve.CurrentEpoch); err != nil || b.End {
				t.Errorf("%s with the token: %v %v", l.network, b, err)
			}
			c.Close()
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-exit:
			if code != 0 {
				t.Fatalf("exit status %d after SIGTERM: %s", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not stop on SIGTERM")
		}
	}
}

// TestServeLeavesSuccessorsSocket: a server stopping with a reply in
// flight (its client reads it only later) removes its own socket file
// when it stops listening, and not the file of a server started at the
// same path meanwhile, when it finally exits.
func TestServeLeavesSuccessorsSocket(t *testing.T) {
	dir, _ := testGraph(t, 500, 6, 4096)
	trainFile := writeTrain(t, []uint32{1, 2, 3, 4, 5, 6, 7, 8})
	sock := filepath.Join(t.TempDir(), "ss.sock")
	pr, pw := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- execute([]string{"serve", "--graph", dir, "--train", trainFile, "--fanouts", "3",
			"--batch-size", "4", "--socket", sock, "--quiet"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready unix:"+sock) {
		t.Fatalf("first line %q, want ready", lines.Text())
	}
	go io.Copy(io.Discard, pr)

	// A walks reply of 2.2 MB, far more than the socket buffers: the
	// server's write waits for this client, which reads only the header.
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	starts := make([]uint32, 100)
	for i := range starts {
		starts[i] = uint32(i)
	}
	req := serve.AppendWalksRequest(nil, starts, walk.Config{Mode: walk.DeepWalk, Length: 10, WalksPerNode: 500, Seed: 1})
	if _, err := nc.Write(serve.AppendFrame(nil, serve.OpWalks, serve.StatusOK, 1, req)); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, serve.HeaderSize)
	if _, err := io.ReadFull(nc, hdr); err != nil || hdr[5] != serve.StatusOK {
		t.Fatalf("walks reply header % x: %v", hdr, err)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Lstat(sock); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stopping server kept its socket file")
		}
	}
	next, err := serve.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	mine, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	// Now the client reads its reply; the first server finishes and exits.
	if _, err := io.CopyN(io.Discard, nc, int64(binary.LittleEndian.Uint32(hdr))-(serve.HeaderSize-4)); err != nil {
		t.Fatalf("rest of the walks reply: %v", err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit status %d after SIGTERM", code)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if fi, err := os.Lstat(sock); err != nil || !os.SameFile(fi, mine) {
		t.Fatalf("the next server's socket file is gone or replaced (%v)", err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("the next server is unreachable: %v", err)
	}
	c.Close()
}

// lockedBuffer is a bytes.Buffer safe for a server's log writes beside
// the test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeLogsEpochFigures: `serve` logs each epoch's figures on stderr
// once (the line run prints, with the sampler's bytes read, and with
// --features the features line), and -q silences them; epoch_info's
// stats count the n_id rows the client received, all from disk without
// a cache.
func TestServeLogsEpochFigures(t *testing.T) {
	const n = 600
	for _, c := range []struct {
		name            string
		quiet, features bool
	}{
		{"plain", false, false},
		{"features", false, true},
		{"features, quiet", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := testGraph(t, n, 6, 4096)
			var train []uint32
			for v := uint32(0); v < n; v += 2 {
				train = append(train, v)
			}
			sock := filepath.Join(t.TempDir(), "ss.sock")
			args := []string{"serve", "--graph", dir, "--train", writeTrain(t, train), "--fanouts", "4,3",
				"--batch-size", "40", "--seed", "3", "--socket", sock}
			if c.features {
				writeFeatures(t, dir, n, 5)
				args = append(args, "--features", "--feature-cache", "0")
			}
			if c.quiet {
				args = append(args, "--quiet")
			}
			var stderr lockedBuffer
			pr, pw := io.Pipe()
			exit := make(chan int, 1)
			go func() {
				exit <- execute(args, strings.NewReader(""), pw, &stderr)
				pw.Close()
			}()
			lines := bufio.NewScanner(pr)
			if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready unix:"+sock) {
				t.Fatalf("first line %q, want ready; stderr:\n%s", lines.Text(), stderr.String())
			}
			go io.Copy(io.Discard, pr)
			cl, err := serve.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var batches, seeds, nid int
			for {
				b, err := cl.NextBatch(0)
				if err != nil {
					t.Fatal(err)
				}
				if b.End {
					break
				}
				batches++
				seeds += len(b.Blocks.Seeds)
				nid += len(b.Blocks.Nodes())
			}
			info, err := cl.EpochInfo()
			if err != nil {
				t.Fatal(err)
			}
			st := info.Stats
			if st == nil || !st.Complete || st.Batches != batches || st.Seeds != seeds || st.BytesRead <= 0 || st.SampleS <= 0 {
				t.Fatalf("epoch_info stats %+v", st)
			}
			if f := st.Features; c.features != (f != nil) || f != nil && (f.Reads.RowsNeeded != int64(nid) || f.Reads.RowsFromDisk != int64(nid)) {
				t.Fatalf("features %+v, %d n_id rows received", f, nid)
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case code := <-exit:
				if code != 0 {
					t.Fatalf("exit status %d; stderr:\n%s", code, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("serve did not stop on SIGTERM")
			}
			var epochLines, featureLines []string
			for _, l := range strings.Split(stderr.String(), "\n") {
				switch {
				case strings.HasPrefix(l, "streamsampler serve: epoch 0: "):
					epochLines = append(epochLines, l)
				case strings.HasPrefix(l, "streamsampler serve:   features: "):
					featureLines = append(featureLines, l)
				}
			}
			if c.quiet {
				if stderr.String() != "" {
					t.Fatalf("-q, yet stderr:\n%s", stderr.String())
				}
				return
			}
			want := fmt.Sprintf("streamsampler serve: epoch 0: %d minibatches (%d seeds, ", batches, seeds)
			if len(epochLines) != 1 || !strings.HasPrefix(epochLines[0], want) || !strings.Contains(epochLines[0], fmt.Sprintf("%d bytes read at", st.BytesRead)) {
				t.Fatalf("epoch lines %q, want one starting %q; stderr:\n%s", epochLines, want, stderr.String())
			}
			if c.features != (len(featureLines) == 1) || c.features && !strings.Contains(featureLines[0], fmt.Sprintf("features: %d rows needed, 0 from the cache", nid)) {
				t.Fatalf("features lines %q; stderr:\n%s", featureLines, stderr.String())
			}
		})
	}
}
