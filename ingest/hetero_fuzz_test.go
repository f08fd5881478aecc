package ingest

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadNodeDict: OGB's num-node-dict CSV, bytes from outside: no
// panic, and what is accepted has valid, unique names and counts within
// the limit.
func FuzzReadNodeDict(f *testing.F) {
	f.Add([]byte("author,field_of_study,institution,paper\n1134649,59965,8740,736389\n"))
	f.Add([]byte("a,b\n1\n"))
	f.Add([]byte("a,a\n1,2\n"))
	f.Add([]byte("\"a\nb\",c\n1,2\n"))
	f.Add([]byte("a\n99999999999\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "num-node-dict.csv")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ts, err := ReadNodeDict(p)
		if err != nil {
			return
		}
		if err := checkTypes(ts); err != nil {
			t.Fatalf("accepted %v: %v", ts, err)
		}
	})
}
