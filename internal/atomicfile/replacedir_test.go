package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// makeTree creates dir holding the given files (name → content).
func makeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns the files in dir (name → content); nil if dir is absent.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		m[e.Name()] = mustRead(t, filepath.Join(dir, e.Name()))
	}
	return m
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestReplaceDir(t *testing.T) {
	fl := useFaults(t)
	syncs := &fl.synced
	oldTree := map[string]string{"manifest.json": "old", "stale": "only in the old tree"}
	newTree := map[string]string{"manifest.json": "new", "edges.chunks": "data"}
	for _, tc := range []struct {
		name      string
		dst       string // "absent", "dir", "empty dir" or "file"
		exchange  string // "real", "unsupported" or "fail"
		rename    int    // fail the n-th call of rename (1-based); 0 for none
		wantErr   bool
		wantTree  string // "new" or "old": what dst holds afterwards
		wantNames []string
	}{
		{name: "absent", dst: "absent", exchange: "real", wantTree: "new"},
		{name: "exchange", dst: "dir", exchange: "real", wantTree: "new"},
		{name: "over an empty dir", dst: "empty dir", exchange: "real", wantTree: "new"},
		{name: "over a file", dst: "file", exchange: "real", wantTree: "new"},
		{name: "fallback", dst: "dir", exchange: "unsupported", wantTree: "new"},
		{name: "exchange fails", dst: "dir", exchange: "fail", wantErr: true, wantTree: "old",
			wantNames: []string{".out.tmp-1", "out"}},
		{name: "fallback aside fails", dst: "dir", exchange: "unsupported", rename: 2, wantErr: true, wantTree: "old",
			wantNames: []string{".out.tmp-1", "out"}},
		{name: "fallback into place fails", dst: "dir", exchange: "unsupported", rename: 3, wantErr: true, wantTree: "old",
			wantNames: []string{".out.tmp-1", "out"}},
		{name: "absent rename fails", dst: "absent", exchange: "real", rename: 1, wantErr: true,
			wantNames: []string{".out.tmp-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "out")
			tmp := filepath.Join(parent, ".out.tmp-1")
			makeTree(t, tmp, newTree)
			switch tc.dst {
			case "dir":
				makeTree(t, dst, oldTree)
			case "empty dir":
				makeTree(t, dst, nil)
			case "file":
				if err := os.WriteFile(dst, []byte("a file"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			calls := 0
			fl.rename = func(string) error {
				calls++
				if calls == tc.rename {
					return errInjected
				}
				return nil
			}
			switch tc.exchange {
			case "real":
				fl.exchange = nil
			case "unsupported":
				fl.exchange = func(string) error { return errExchangeUnsupported }
			case "fail":
				fl.exchange = func(string) error { return errInjected }
			}
			*syncs = nil
			err := ReplaceDir(tmp, dst)
			if tc.wantErr != (err != nil) {
				t.Fatalf("ReplaceDir = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, errInjected) {
				t.Fatalf("ReplaceDir = %v, want the injected error", err)
			}
			switch tc.wantTree {
			case "new":
				if got := readTree(t, dst); !sameTree(got, newTree) {
					t.Fatalf("dst holds %v, want the new tree", got)
				}
			case "old":
				if got := readTree(t, dst); !sameTree(got, oldTree) {
					t.Fatalf("dst holds %v, want the old tree", got)
				}
				if got := readTree(t, tmp); !sameTree(got, newTree) {
					t.Fatalf("tmp holds %v, want the new tree, for the caller to remove", got)
				}
			}
			// The new tree's entries are made durable before the move, the
			// move itself after it.
			if len(*syncs) == 0 || (*syncs)[0] != tmp {
				t.Fatalf("synced %v, want %s first", *syncs, tmp)
			}
			if !tc.wantErr && !slices.Contains(*syncs, parent) {
				t.Fatalf("synced %v, want the parent %s", *syncs, parent)
			}
			wantNames := tc.wantNames
			if wantNames == nil {
				wantNames = []string{"out"}
			}
			if names := entries(t, parent); !slices.Equal(names, wantNames) {
				t.Fatalf("parent holds %v, want %v", names, wantNames)
			}
		})
	}
}

// TestReplaceDirExchange checks the Linux exchange itself where it runs:
// both trees survive the swap, each under the other's name.
func TestReplaceDirExchange(t *testing.T) {
	parent := t.TempDir()
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	makeTree(t, a, map[string]string{"x": "A"})
	makeTree(t, b, map[string]string{"y": "B"})
	err := exchangeNames(a, b)
	if errors.Is(err, errExchangeUnsupported) {
		t.Skip("no atomic exchange on this platform or file system")
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, a); !sameTree(got, map[string]string{"y": "B"}) {
		t.Fatalf("a holds %v", got)
	}
	if got := readTree(t, b); !sameTree(got, map[string]string{"x": "A"}) {
		t.Fatalf("b holds %v", got)
	}
	if err := exchangeNames(a, filepath.Join(parent, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("exchange with a missing name = %v, want fs.ErrNotExist", err)
	}
}

// TestMoveDir moves a tree into place and syncs it and the parent; it
// never replaces an existing tree, and says fs.ErrExist then; a failed
// directory fsync after the rename is not mistaken for "exists".
func TestMoveDir(t *testing.T) {
	fl := useFaults(t)
	syncs := &fl.synced
	parent := t.TempDir()
	dst := filepath.Join(parent, "epoch-1")
	tmp := filepath.Join(parent, ".epoch-1.tmp-1")
	makeTree(t, tmp, map[string]string{"a": "1", "b": "2"})
	if err := MoveDir(tmp, dst); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dst); !sameTree(got, map[string]string{"a": "1", "b": "2"}) || readTree(t, tmp) != nil {
		t.Fatalf("after MoveDir: dst %v, tmp %v", got, readTree(t, tmp))
	}
	if !slices.Equal(*syncs, []string{tmp, parent}) {
		t.Fatalf("synced %v, want the tree then its parent", *syncs)
	}

	tmp2 := filepath.Join(parent, ".epoch-1.tmp-2")
	makeTree(t, tmp2, map[string]string{"c": "3"})
	if err := MoveDir(tmp2, dst); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("MoveDir onto an existing tree = %v, want fs.ErrExist", err)
	}
	if got := readTree(t, dst); !sameTree(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("existing tree changed: %v", got)
	}

	dst3 := filepath.Join(parent, "epoch-3")
	fl.fsync = func(path string) error {
		if path == parent {
			return errInjected
		}
		return nil
	}
	if err := MoveDir(tmp2, dst3); !errors.Is(err, errInjected) || errors.Is(err, fs.ErrExist) {
		t.Fatalf("MoveDir with a failing parent fsync = %v, want only the injected error", err)
	}
	if got := readTree(t, dst3); !sameTree(got, map[string]string{"c": "3"}) {
		t.Fatalf("after the rename the tree is in place, got %v", got)
	}
}
