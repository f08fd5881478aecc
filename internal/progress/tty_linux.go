//go:build linux

package progress

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TCGETS
