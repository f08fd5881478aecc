//go:build linux

package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procStat returns the state letter and start time (field 22, clock ticks
// since boot) of process pid from /proc/PID/stat.
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields that follow start after the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	f := bytes.Fields(b[i+1:])
	const startField = 22 - 3 // field 22, counting from field 3 (state)
	if len(f) <= startField || len(f[0]) != 1 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	start, err = strconv.ParseUint(string(f[startField]), 10, 64)
	return f[0][0], start, err
}

// procStart is pid's start time, 0 where /proc cannot tell it.
func procStart(pid int) uint64 {
	_, start, err := procStat(pid)
	if err != nil {
		return 0
	}
	return start
}

// ownerAlive reports whether o's process may still be running. Only a
// definite "gone" counts as dead: no such pid, a zombie (it can write
// nothing more), or a process with o's pid that started at another time
// (the pid was reused).
func ownerAlive(o owner) bool {
	state, start, err := procStat(o.pid)
	switch {
	case err == nil:
		if state == 'Z' || state == 'X' {
			return false
		}
		return o.start == 0 || start == o.start
	case errors.Is(err, fs.ErrNotExist) && procStart(os.Getpid()) != 0:
		return false // /proc works, and has no such process
	}
	// No usable /proc: ask the kernel whether the pid exists at all.
	err = unix.Kill(o.pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
