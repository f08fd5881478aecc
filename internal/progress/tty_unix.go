//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package progress

import "golang.org/x/sys/unix"

// IsTerminal reports whether fd is a terminal. It asks for the terminal
// attributes, which only a tty has.
func IsTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil
}
