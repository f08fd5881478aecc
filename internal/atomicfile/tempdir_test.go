package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestTempDirNameRecordsOwner(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "g.v1")
	tmp, err := TempDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != filepath.Dir(dst) {
		t.Fatalf("TempDir %s is not beside %s", tmp, dst)
	}
	o, ok := parseTempName("g.v1", filepath.Base(tmp))
	if !ok || o != self() {
		t.Fatalf("%s: owner %+v (parsed %v), want %+v", filepath.Base(tmp), o, ok, self())
	}
	if runtime.GOOS == "linux" && o.start == 0 {
		t.Fatal("no start time recorded on Linux")
	}
}

// TestRemoveStaleTemps: the temporaries of dead owners (gone, or a
// reused pid), directories (TempDir) and files (Create) alike, are
// removed; those of live owners, of another host, of another
// destination, and names neither makes are kept.
func TestRemoveStaleTemps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("owner checks need /proc")
	}
	parent := t.TempDir()
	dst := filepath.Join(parent, "g")
	me := self()
	dead := owner{pid: deadPID(t), start: 12345, host: me.host}
	reused := owner{pid: me.pid, start: me.start + 1, host: me.host}
	otherHost := owner{pid: dead.pid, start: dead.start, host: me.host + 1}
	live, err := TempDir(dst) // this process's own, still "building"
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{ // name → should be removed
		tempPrefix("g", dead) + "111":      true,
		tempPrefix("g", reused) + "222":    true,
		tempPrefix("g", otherHost) + "333": false,
		tempPrefix("h", dead) + "444":      false, // another destination
		tempPrefix("g", dead) + "555.old":  false, // ReplaceDir's aside copy
		".g.tmp-123456789":                 false, // the old naming: owner unknown
		".g.tmp-x-1-00000000-1":            false,
		"g":                                false,
		filepath.Base(live):                false,
	}
	for n := range names {
		makeTree(t, filepath.Join(parent, n), map[string]string{"edges.chunks": n})
	}
	// Files: a dead owner's is a killed writer's temporary (Create's); a
	// live one's is being written.
	files := map[string]bool{tempPrefix("g", dead) + "666": true, tempPrefix("g", me) + "777": false}
	for n, gone := range files {
		if err := os.WriteFile(filepath.Join(parent, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		names[n] = gone
	}
	removed, err := RemoveStaleTemps(dst)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for n, gone := range names {
		if gone {
			want = append(want, filepath.Join(parent, n))
		}
	}
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for n, gone := range names {
		_, err := os.Stat(filepath.Join(parent, n))
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, want %v (stat: %v)", n, !gone, gone, err)
		}
	}
	// Idempotent: nothing more to remove.
	if again, err := RemoveStaleTemps(dst); err != nil || len(again) != 0 {
		t.Fatalf("second call removed %v, %v", again, err)
	}
}

func TestOwnerAlive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("owner checks need /proc")
	}
	me := self()
	for _, c := range []struct {
		name string
		o    owner
		want bool
	}{
		{"this process", me, true},
		{"this process, start unknown", owner{pid: me.pid}, true},
		{"parent process", owner{pid: os.Getppid(), start: procStart(os.Getppid())}, true},
		{"reused pid", owner{pid: me.pid, start: me.start + 1}, false},
		{"exited", owner{pid: deadPID(t), start: 1}, false},
	} {
		if got := ownerAlive(c.o); got != c.want {
			t.Errorf("%s %+v: alive %v, want %v", c.name, c.o, got, c.want)
		}
	}
}

func TestParseTempName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
		o    owner
	}{
		{".g.tmp-42-7-0000abcd-99", true, owner{42, 7, 0xabcd}},
		{".g-x.tmp-1.2.tmp-42-7-0000abcd-99", false, owner{}}, // base "g" only
		{".g.tmp-42-7-abcd-99", false, owner{}},
		{".g.tmp-0-7-0000abcd-99", false, owner{}},
		{".g.tmp-42-7-0000abcd-", false, owner{}},
		{".g.tmp-42-7-0000abcd-99.old", false, owner{}},
		{".g.tmp-42-7-0000abcd-99-1", false, owner{}},
		{".g.tmp-99", false, owner{}},
		{"g.tmp-42-7-0000abcd-99", false, owner{}},
	} {
		o, ok := parseTempName("g", c.name)
		if ok != c.ok || o != c.o {
			t.Errorf("%q: %+v %v, want %+v %v", c.name, o, ok, c.o, c.ok)
		}
	}
}
