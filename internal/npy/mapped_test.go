package npy

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestMappedInt32: what is written into Data is, after Commit, the file's
// data under the header WriteArray would write; Abort leaves the previous
// file as it was and no temporary beside it.
func TestMappedInt32(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.npy")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := CreateMappedInt32(path, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Data) != 15 {
		t.Fatalf("%d entries mapped, want 15", len(m.Data))
	}
	for i := range m.Data {
		m.Data[i] = int32(i) - 4
	}
	m.Abort()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("aborted: the file became %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("aborted: %d entries, want the old file alone", len(ents))
	}

	m, err = CreateMappedInt32(path, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int32, 15)
	for i := range m.Data {
		m.Data[i] = int32(i) * -3
		want[i] = m.Data[i]
	}
	if err := m.Commit(); err != nil {
		t.Fatal(err)
	}
	m.Abort() // after Commit: nothing
	var wb bytes.Buffer
	if _, err := (Header{Descr: "<i4", Shape: []int{3, 5}}).WriteTo(&wb); err != nil {
		t.Fatal(err)
	}
	if err := binary.Write(&wb, binary.LittleEndian, want); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, wb.Bytes()) {
		t.Fatalf("committed file of %d bytes differs from the .npy of %d", len(got), wb.Len())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("committed: %d entries, want the file alone", len(ents))
	}
	if _, err := CreateMappedInt32(filepath.Join(dir, "none", "a.npy"), 1, 1); err == nil {
		t.Fatal("a file in a missing directory was created")
	}
}
