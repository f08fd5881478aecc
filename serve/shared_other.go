//go:build !linux

package serve

import (
	"errors"
	"net"
)

const sharedRowsSupported = false

func memFile(b []byte) (int, error) { return -1, errors.New("no memory files here") }

func writeWithFD(nc net.Conn, bufs net.Buffers, fd int) error {
	return errors.New("no descriptor passing here")
}
