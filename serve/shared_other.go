//go:build !linux

package serve

import (
	"context"
	"errors"
	"net"
)

const sharedRowsSupported = false

type rowPool struct{}

type rowLease struct{ retire uint32 }

type rowBuf struct{ id uint32 }

func newRowPool(rowAccount) *rowPool                { return &rowPool{} }
func (p *rowPool) acquire(n int) (*rowLease, error) { return nil, errors.New("no memory files here") }
func (p *rowPool) acquireWait(_ context.Context, n int) (*rowLease, error) {
	return nil, errors.New("no memory files here")
}
func (p *rowPool) close()                {}
func (l *rowLease) bytes(n int) []byte   { return nil }
func (l *rowLease) abandon()             {}
func (l *rowLease) attach() (int, error) { return -1, errors.New("no memory files here") }
func (l *rowLease) id() uint32           { return 0 }
func (l *rowLease) shared() bool         { return false }

const rowsOffset = 4096

func writeFD(nc net.Conn, b []byte, fd int) (int, error) {
	return 0, errors.New("no descriptor passing here")
}

func closeFD(fd int) {}
