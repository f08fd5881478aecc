package ingest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages counts the pages of path in the page cache (mincore over
// a read-only mapping).
func residentPages(t *testing.T, path string) (resident, total int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec)
}

// TestDropBehind: an input read with ReadOptions.DropBehind gives the same
// edges, and leaves at most the last dropEvery bytes of it in the page
// cache; read without it, the file stays cached.
func TestDropBehind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "e.bin32")
	data := make([]byte, 3*dropEvery+12345*8)
	for i := range data {
		data[i] = byte(i*7) & 0x0F // ids below 2^28
	}
	// Written and synced: dirty pages cannot be dropped, and an input
	// is normally an old, clean file.
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	read := func(drop bool) []byte {
		r, err := OpenEdges(path, ReadOptions{Format: FormatBin32, DropBehind: drop})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out bytes.Buffer
		for {
			p, err := r.Next()
			if err == io.EOF {
				return out.Bytes()
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range p {
				out.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
			}
		}
	}
	if got := read(false); !bytes.Equal(got, data) {
		t.Fatal("edges differ from the file")
	}
	before, total := residentPages(t, path)
	if before < total/2 {
		t.Skipf("the file is not cached after a read (%d of %d pages): cannot observe dropping here", before, total)
	}
	if got := read(true); !bytes.Equal(got, data) {
		t.Fatal("edges read with DropBehind differ from the file")
	}
	after, _ := residentPages(t, path)
	// Everything but the tail read since the last drop (less than
	// dropEvery, plus the readahead window) is gone.
	limit := int((dropEvery + readBufSize + 8<<20) / int64(os.Getpagesize()))
	if after > limit {
		t.Fatalf("%d of %d pages still cached after a DropBehind read (before: %d; want at most %d)", after, total, before, limit)
	}
}
