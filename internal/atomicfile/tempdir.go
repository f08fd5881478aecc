package atomicfile

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// owner identifies the process that made a temporary directory: its pid,
// its start time (clock ticks since boot, from /proc/PID/stat; 0 where
// unknown), which tells a live owner from a later process that was given
// the same pid, and a hash of the host name, so that a directory on a
// shared file system made by another machine's process is never taken for
// one of ours.
type owner struct {
	pid   int
	start uint64
	host  uint32
}

// self is the owner of the directories this process makes.
func self() owner {
	pid := os.Getpid()
	return owner{pid: pid, start: procStart(pid), host: hostHash()}
}

func hostHash() uint32 {
	name, _ := os.Hostname()
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// tempPrefix is the name of a temporary directory for base made by o, up
// to the random suffix: ".base.tmp-PID-START-HOST-".
func tempPrefix(base string, o owner) string {
	return fmt.Sprintf(".%s.tmp-%d-%d-%08x-", base, o.pid, o.start, o.host)
}

// parseTempName returns the owner recorded in name, a directory entry
// beside dst whose base is base, and whether name is a temporary made by
// TempDir for it.
func parseTempName(base, name string) (owner, bool) {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	if !ok {
		return owner{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 4 || f[3] == "" {
		return owner{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	host, err3 := strconv.ParseUint(f[2], 16, 32)
	_, err4 := strconv.ParseUint(f[3], 10, 64) // os.MkdirTemp's random part
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || pid <= 0 || len(f[2]) != 8 {
		return owner{}, false
	}
	return owner{pid: pid, start: start, host: uint32(host)}, true
}

// TempDir creates an empty directory beside dst in which to build dst's
// new content before ReplaceDir or MoveDir moves it into place. Its name,
// "." + base + ".tmp-PID-START-HOST-" + a random suffix, records the
// process that owns it, so that RemoveStaleTemps can remove it if this
// process dies (SIGKILL, a crash, the OOM killer) before it could clean
// up. dst's parent directory must exist. The directory gets the mode
// mkdir gives (0777 less the umask), not os.MkdirTemp's 0700, since it
// becomes dst: a graph or epoch directory other users may read.
func TempDir(dst string) (string, error) {
	dst = filepath.Clean(dst)
	prefix := filepath.Join(filepath.Dir(dst), tempPrefix(filepath.Base(dst), self()))
	for range 10000 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := os.Mkdir(name, 0o777)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("atomicfile: no free temporary name %s*", prefix)
}

// RemoveStaleTemps removes the temporaries TempDir and Create made for
// dst (directories and files) whose owning process has exited, and
// returns their paths. A directory whose
// owner is still running (the same pid with the same start time) is kept,
// whatever its age; so is one made on another host, one whose owner
// cannot be checked, and every name TempDir does not make (older
// ".base.tmp-RANDOM" names included). ReplaceDir's fallback leaves an old
// tree at TEMP.old, which may be the only copy of dst's old content: such
// names are never touched either.
func RemoveStaleTemps(dst string) ([]string, error) {
	dst = filepath.Clean(dst)
	parent, base := filepath.Dir(dst), filepath.Base(dst)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	me := self()
	var removed []string
	var errs []error
	for _, e := range ents {
		if !e.IsDir() && !e.Type().IsRegular() {
			continue
		}
		o, ok := parseTempName(base, e.Name())
		if !ok || o.host != me.host || ownerAlive(o) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	if len(removed) > 0 {
		if err := SyncDir(parent); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}
