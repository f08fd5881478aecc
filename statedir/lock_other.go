//go:build !unix

package statedir

// Lock is a no-op where flock is not available: one process should own a
// state directory.
func (s State) Lock() (unlock func(), err error) { return func() {}, nil }
