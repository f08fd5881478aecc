//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package progress

// IsTerminal reports false where the platform has no termios: progress is
// then never drawn, which is always safe.
func IsTerminal(fd uintptr) bool { return false }
