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

// memFile returns a sealed-size anonymous memory file holding b: the
// client maps it and reads the rows where the server wrote them, instead of
// receiving them through the socket.
func memFile(b []byte) (int, error) {
	fd, err := unix.MemfdCreate("streamsampler-rows", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("writing rows into a memory file: %w", err)
		}
		off += n
	}
	return fd, nil
}

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
