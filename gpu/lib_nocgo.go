//go:build !cgo || !linux

package gpu

// library stands in for the dlopen'ed library where cgo is unavailable:
// loading always fails with ErrNoCgo, so a CGO_ENABLED=0 binary builds
// and says why --backend gpu cannot work.
type library struct{}

func loadLibrary(libPath string) (*library, error) { return nil, ErrNoCgo }

func (*library) deviceCheck(int) error { return ErrNoCgo }

func (*library) open(int, []uint64, []uint32, Options) (*Backend, error) { return nil, ErrNoCgo }

func (*library) openStream(int, uint32, uint64, Options, func(CSRSink) error) (*Backend, error) {
	return nil, ErrNoCgo
}
