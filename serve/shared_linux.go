//go:build linux

package serve

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// sharedRowsSupported says whether this platform can hand feature rows
// over in memory files (memfd_create and SCM_RIGHTS).
const sharedRowsSupported = true

// writeWithFD writes the reply bufs on a Unix connection with fd passed
// along the frame's first bytes (SCM_RIGHTS), then closes this process's
// copy of fd.
func writeWithFD(nc net.Conn, bufs net.Buffers, fd int) error {
	defer unix.Close(fd)
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("shared rows on a %T", nc)
	}
	first := bufs[0]
	if _, _, err := uc.WriteMsgUnix(first, unix.UnixRights(fd), nil); err != nil {
		return err
	}
	rest := bufs[1:]
	_, err := rest.WriteTo(nc)
	return err
}
