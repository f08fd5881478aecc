//go:build !linux

package aio

import (
	"fmt"
	"io"
	"os"
)

// DirectFD reports no O_DIRECT descriptor: there is none outside Linux.
func DirectFD(io.ReaderAt) (int, bool) { return 0, false }

// Context is unavailable outside Linux (New returns ErrUnavailable).
type Context struct{ depth int }

// New returns ErrUnavailable: Linux AIO exists only on Linux, and the
// callers read through their pread goroutines instead.
func New(depth int) (*Context, error) {
	return nil, fmt.Errorf("%w: not Linux", ErrUnavailable)
}

// Depth is the most reads the context keeps in flight.
func (a *Context) Depth() int { return a.depth }

// Destroy does nothing (New never returns a Context here).
func (a *Context) Destroy() {}

// Read returns ErrUnavailable (New never returns a Context here).
func (a *Context) Read(fd, n, depth int, prep func(k, slot int) (int64, []byte), done func(k, slot int, buf []byte, got int, err error) error) error {
	return ErrUnavailable
}

// OpenDirect opens path buffered (no O_DIRECT outside Linux); direct is
// false.
func OpenDirect(path string) (f *os.File, direct bool, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	return f, false, nil
}
