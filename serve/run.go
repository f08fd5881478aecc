package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Addresses says where a server listens: a Unix socket (with its
// permission bits) and a TCP address (loopback only: ListenTCP), either
// or both.
type Addresses struct {
	Socket     string
	SocketMode os.FileMode
	TCP        string
}

// ShutdownGrace bounds how long Run waits, once ctx is done, for the
// replies in flight before closing every connection.
const ShutdownGrace = 30 * time.Second

// Run is a server's whole life, as `streamsampler serve` lives it: it
// listens on a (before the first epoch is sampled, so that a bad address
// fails at once while clients wait in the backlog), starts s, tells ready
// the addresses and the first epoch, serves until ctx is done or a
// listener fails, then shuts down gracefully (ShutdownGrace). Each
// listener removes its own socket file, and only its own. A TCP address
// that is not loopback is ErrNotLoopback.
func Run(ctx context.Context, s *Server, a Addresses, ready func(addrs []net.Addr, info EpochInfo)) error {
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	if a.Socket != "" {
		ln, err := ListenUnixMode(a.Socket, a.SocketMode)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	if a.TCP != "" {
		ln, err := ListenTCP(a.TCP)
		if err != nil {
			closeAll()
			return err
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return errors.New("serve: no address to listen on")
	}
	if err := s.Start(ctx); err != nil {
		closeAll()
		return err
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- s.Serve(ln) }()
	}
	if ready != nil {
		addrs := make([]net.Addr, len(lns))
		for i, ln := range lns {
			addrs[i] = ln.Addr()
		}
		ready(addrs, s.Info())
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil && serveErr == nil {
		serveErr = fmt.Errorf("shutdown: %w", err)
	}
	if errors.Is(serveErr, ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}
