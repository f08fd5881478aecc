package statedir

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// OpenLocked takes s's lock, removes what interrupted runs left (Clean;
// report, if not nil, sees each removal, also when a later one fails)
// and returns the committed state that is left, opened again, with the
// function that releases the lock. It is the start of a command that
// changes the directory without writing epochs (advance); the commands
// that write epochs Begin a Txn, which does the same and refuses orphans.
func (s State) OpenLocked(report func(Leftover)) (c *Contents, unlock func(), err error) {
	release, err := s.Lock()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if c, err = s.Open(); err != nil {
		return nil, nil, err
	}
	removed, err := s.Clean(c)
	if report != nil {
		for _, l := range removed {
			report(l)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	// What is left is the committed state alone.
	if c, err = s.Open(); err != nil {
		return nil, nil, err
	}
	return c, release, nil
}

// Inspect opens s (Open) and, when it can take the lock, removes what
// interrupted runs left (Clean) and opens it again: removed is what it
// removed. While another process holds the lock it removes nothing (the
// leftovers may be that process's files in the making) and returns them
// as kept: a reader's view of the directory that never waits for a
// running command.
func (s State) Inspect() (c *Contents, removed, kept []Leftover, err error) {
	unlock, err := s.Lock()
	switch {
	case errors.Is(err, ErrBusy):
		c, err := s.Open()
		if err != nil {
			return nil, nil, nil, err
		}
		return c, nil, c.Leftovers, nil
	case err != nil:
		return nil, nil, nil, err
	}
	defer unlock()
	if c, err = s.Open(); err != nil {
		return nil, nil, nil, err
	}
	if removed, err = s.Clean(c); err != nil {
		return nil, removed, nil, err
	}
	if c, err = s.Open(); err != nil {
		return nil, removed, nil, err
	}
	return c, removed, nil, nil
}

// EpochBytes returns the size of epoch n's directory: its files' sizes,
// summed (what the epoch takes on disk, allocation aside).
func (s State) EpochBytes(n uint32) (int64, error) {
	var total int64
	err := filepath.WalkDir(s.EpochDir(n), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += fi.Size()
		}
		return nil
	})
	return total, err
}
