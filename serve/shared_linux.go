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

// writeFD writes (some of) b on a Unix connection with fd passed along
// its first byte (SCM_RIGHTS), in one sendmsg: it returns how many bytes
// went, and fd went with them if any did. The caller still owns fd.
func writeFD(nc net.Conn, b []byte, fd int) (int, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("shared rows on a %T", nc)
	}
	n, _, err := uc.WriteMsgUnix(b, unix.UnixRights(fd), nil)
	return n, err
}

// closeFD closes a descriptor of this process.
func closeFD(fd int) { unix.Close(fd) }
