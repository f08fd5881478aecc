package xrt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestReadP2P(t *testing.T) {
	g := newTestGraph(300, 100, 20, 16<<10)
	path := g.writeFile(t, t.TempDir())
	f, direct := openDirect(t, path)
	defer f.Close()
	t.Logf("O_DIRECT: %v", direct)
	dev, _ := openEmu(t, EmulatorConfig{})
	bo := must[BO](t)(dev.AllocBO(3*g.chunkSize, BOP2P, 0))
	m := must[[]byte](t)(bo.Map())
	// Chunks 2, 0, 1 into slots 0, 1, 2: each lands at its buffer offset.
	for slot, c := range []int{2, 0, 1} {
		if err := ReadP2P(f, bo, slot*g.chunkSize, int64(c*g.chunkSize), g.chunkSize); err != nil {
			t.Fatal(err)
		}
	}
	for slot, c := range []int{2, 0, 1} {
		if !slices.Equal(m[slot*g.chunkSize:(slot+1)*g.chunkSize], g.chunk(t, c)) {
			t.Fatalf("slot %d does not hold chunk %d", slot, c)
		}
	}
	normal := must[BO](t)(dev.AllocBO(g.chunkSize, BONormal, 0))
	size := int64(3 * g.chunkSize)
	for _, tc := range []struct {
		name     string
		bo       BO
		boOff    int
		fileOff  int64
		n        int
		want     error
		wantText string
	}{
		{"normal BO", normal, 0, 0, 4096, nil, "not p2p"},
		{"buffer offset 512", bo, 512, 0, 512, ErrAlignment, ""},
		{"file offset 100", bo, 0, 100, 512, ErrAlignment, ""},
		{"size 1000", bo, 0, 0, 1000, ErrAlignment, ""},
		{"size 0", bo, 0, 0, 0, ErrAlignment, ""},
		{"past the buffer", bo, 2 * g.chunkSize, 0, g.chunkSize + 512, ErrBounds, ""},
		{"negative file offset", bo, 0, -512, 512, nil, "negative file offset"},
		{"past end of file", bo, 0, size - 1024, 4096, ErrShortRead, "file ended after 1024 bytes"},
		{"at end of file", bo, 0, size, 512, ErrShortRead, "after 0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ReadP2P(f, tc.bo, tc.boOff, tc.fileOff, tc.n)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || (tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText)) {
				t.Fatalf("err %v, want %v %q", err, tc.want, tc.wantText)
			}
			if !strings.Contains(err.Error(), filepath.Base(path)) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if err := ReadP2P(nil, bo, 0, 0, 512); err == nil {
		t.Error("nil file accepted")
	}
	// I/O errors are wrapped with the call's context.
	old := filePread
	filePread = func(*os.File, []byte, int64) (int, error) { return 0, syscall.EIO }
	defer func() { filePread = old }()
	if err := ReadP2P(f, bo, 0, 0, 512); !errors.Is(err, syscall.EIO) {
		t.Errorf("injected EIO: %v", err)
	}
	filePread = func(_ *os.File, b []byte, _ int64) (int, error) { return len(b) / 2, nil }
	if err := ReadP2P(f, bo, 0, 0, 4096); !errors.Is(err, ErrShortRead) {
		t.Errorf("short read without error: %v", err)
	}
}
