package progress

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDisabledWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, 100, "x", false)
	b.Add(50)
	b.AddItems(7)
	time.Sleep(2 * Interval)
	b.Done()
	if buf.Len() != 0 {
		t.Fatalf("disabled bar wrote %q", buf.String())
	}
	if b.Bytes() != 50 || b.Items() != 7 {
		t.Fatalf("counters = %d, %d; want 50, 7", b.Bytes(), b.Items())
	}
}

func TestNilBarIsNoop(t *testing.T) {
	var b *Bar
	b.Add(1)
	b.AddItems(1)
	b.SetUnit("edges")
	b.SetLabel("x")
	b.SetTotal(3)
	b.Done()
	if b.Bytes() != 0 || b.Items() != 0 || b.Elapsed() != 0 {
		t.Fatal("nil bar returned non-zero")
	}
}

// syncBuf is a bytes.Buffer safe for the drawing goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEnabledRedrawsAtMostFourPerSecond(t *testing.T) {
	var buf syncBuf
	b := New(&buf, 1000, "reading", true)
	b.SetUnit("edges")
	deadline := time.Now().Add(1100 * time.Millisecond)
	for time.Now().Before(deadline) {
		b.Add(1)
		b.AddItems(10)
		time.Sleep(time.Millisecond)
	}
	b.Done()
	out := buf.String()
	draws := strings.Count(out, "reading: ")
	if draws < 2 || draws > 5 {
		t.Fatalf("%d redraws in 1.1 s; want 2..5 (at most one per %v)", draws, Interval)
	}
	if !strings.Contains(out, "edges/s") || !strings.Contains(out, "ETA") {
		t.Fatalf("line lacks rate or ETA: %q", out)
	}
	// The last thing written blanks the line and returns the cursor.
	if !strings.HasSuffix(out, "\r") {
		t.Fatalf("Done did not erase the line: %q", out[max(0, len(out)-40):])
	}
}

func TestLine(t *testing.T) {
	b := New(nil, 4<<20, "pass 1", false)
	b.SetUnit("edges")
	b.Add(1 << 20)
	b.AddItems(3_000_000)
	got := b.line(2 * time.Second)
	want := "pass 1: 1.0 MiB / 4.0 MiB (25%), 512.0 KiB/s, 1.50M edges/s, ETA 6s"
	if got != want {
		t.Fatalf("line = %q\nwant   %q", got, want)
	}
	b.SetTotal(0)
	if got := b.line(time.Second); strings.Contains(got, "ETA") || strings.Contains(got, "%") {
		t.Fatalf("unknown total still shows ETA/percent: %q", got)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {512 << 20, "512.0 MiB"}, {3 << 40, "3.0 TiB"}} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		x    float64
		want string
	}{{12, "12"}, {1500, "1.5k"}, {2.5e6, "2.50M"}, {3e9, "3.00G"}} {
		if got := Count(c.x); got != c.want {
			t.Errorf("Count(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestEnabledOffTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "notatty")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Enabled(f, false) {
		t.Fatal("a regular file was taken for a terminal")
	}
	if Enabled(nil, false) {
		t.Fatal("nil file enabled")
	}
	if IsTerminal(f.Fd()) {
		t.Fatal("IsTerminal(regular file) = true")
	}
}
