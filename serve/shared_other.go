//go:build !linux

package serve

import (
	"errors"
	"net"
)

const sharedRowsSupported = false

type rowPool struct{}

type rowLease struct{ retire uint32 }

type rowBuf struct{ id uint32 }

func newRowPool() *rowPool                          { return &rowPool{} }
func (p *rowPool) acquire(n int) (*rowLease, error) { return nil, errors.New("no memory files here") }
func (p *rowPool) close()                           {}
func (l *rowLease) bytes(n int) []byte              { return nil }
func (l *rowLease) abandon()                        {}
func (l *rowLease) attach() (int, error)            { return -1, errors.New("no memory files here") }
func (l *rowLease) id() uint32                      { return 0 }

const rowsOffset = 4096

func writeWithFD(nc net.Conn, bufs net.Buffers, fd int) error {
	return errors.New("no descriptor passing here")
}
