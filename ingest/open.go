package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/streamsampler/streamsampler/internal/progress"
)

// readBufSize is the size of read and decompression buffers. Large reads
// keep syscalls and per-buffer overhead negligible.
const readBufSize = 1 << 20

// stream is one opened input: its decompressed bytes, peekable.
type stream struct {
	r       *bufio.Reader
	under   io.Reader // the reader beneath r
	name    string
	comp    compression
	closers []func() error
}

// unbuffered returns a reader of the bytes r has not yet handed out that,
// once r's buffer is drained, reads from the reader beneath r directly.
// It is for a consumer that reads blocks as large as r's buffer, which
// through r would cost a copy of every byte (bufio reads straight into
// the caller's slice only when it is at least as large as its own
// buffer). r must not be read after this.
func (s *stream) unbuffered() io.Reader {
	n := s.r.Buffered()
	if n == 0 {
		return s.under
	}
	// Peek does not read here: n bytes are buffered. Nothing refills the
	// buffer afterwards, so head stays valid.
	head, _ := s.r.Peek(n)
	return io.MultiReader(bytes.NewReader(head), s.under)
}

func (s *stream) Close() error {
	var first error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	s.closers = nil
	return first
}

// countingReader reports the raw bytes read to a progress bar.
type countingReader struct {
	r   io.Reader
	bar *progress.Bar
	// With drop set, the pages of drop behind the read offset are handed
	// back to the kernel every dropEvery bytes (see ReadOptions.DropBehind).
	drop         *os.File
	off, dropped int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.bar.Add(int64(n))
	if c.drop != nil {
		c.off += int64(n)
		if c.off-c.dropped >= dropEvery {
			dropCache(c.drop, c.dropped, c.off-c.dropped)
			c.dropped = c.off
		}
	}
	return n, err
}

// openStream opens path, detects gzip/zstd by magic bytes and returns the
// decompressed stream. Decompression runs in its own goroutine (readahead)
// so that it overlaps parsing. bar, which may be nil, counts raw bytes;
// dropBehind hands the file's pages back as they are read.
func openStream(path, name string, bar *progress.Bar, dropBehind bool) (*stream, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &stream{name: name, closers: []func() error{f.Close}}
	counted := &countingReader{r: f, bar: bar}
	if dropBehind {
		counted.drop = f
	}
	raw := bufio.NewReaderSize(counted, readBufSize)
	head, err := raw.Peek(4)
	if err != nil && err != io.EOF {
		s.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.comp = sniffCompression(head)
	var dec io.Reader
	switch s.comp {
	case compNone:
		s.r, s.under = raw, counted
		return s, nil
	case compGzip:
		zr, err := gzip.NewReader(raw)
		if err != nil {
			s.Close()
			return nil, &InputError{File: name, Record: -1, Msg: "corrupt gzip header: " + err.Error(), Err: err}
		}
		s.closers = append(s.closers, zr.Close)
		dec = zr
	case compZstd:
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(min(4, runtime.GOMAXPROCS(0))), zstd.WithDecoderLowmem(false))
		if err != nil {
			s.Close()
			return nil, &InputError{File: name, Record: -1, Msg: "corrupt zstd stream: " + err.Error(), Err: err}
		}
		s.closers = append(s.closers, func() error { zr.Close(); return nil })
		dec = zr
	}
	ra := newReadahead(&decompErr{r: dec, name: name, comp: s.comp}, 4)
	s.closers = append(s.closers, ra.Close)
	s.r, s.under = bufio.NewReaderSize(ra, 64<<10), ra
	return s, nil
}

// decompErr turns a decompressor's failures into errors naming the file.
// A truncated stream is the common case and gets a plain message.
type decompErr struct {
	r    io.Reader
	name string
	comp compression
}

func (d *decompErr) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		kind := "gzip"
		if d.comp == compZstd {
			kind = "zstd"
		}
		msg := fmt.Sprintf("corrupt %s stream: %v", kind, err)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			msg = fmt.Sprintf("truncated %s stream (unexpected end of file)", kind)
		}
		err = &InputError{File: d.name, Record: -1, Msg: msg, Err: err}
	}
	return n, err
}

// readahead reads its source in a goroutine into a few large buffers, so
// that decompression runs in parallel with whoever consumes the bytes.
type readahead struct {
	full  chan raBuf
	empty chan []byte
	quit  chan struct{}
	wg    sync.WaitGroup
	cur   raBuf
	off   int
	once  sync.Once
}

type raBuf struct {
	b   []byte
	err error
}

func newReadahead(src io.Reader, n int) *readahead {
	ra := &readahead{full: make(chan raBuf, n), empty: make(chan []byte, n), quit: make(chan struct{})}
	for range n {
		ra.empty <- make([]byte, readBufSize)
	}
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		for {
			var b []byte
			select {
			case b = <-ra.empty:
			case <-ra.quit:
				return
			}
			m, err := io.ReadFull(src, b)
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			ra.full <- raBuf{b: b[:m], err: err}
			if err != nil {
				return
			}
		}
	}()
	return ra
}

func (ra *readahead) Read(p []byte) (int, error) {
	for ra.off == len(ra.cur.b) {
		if ra.cur.err != nil {
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.empty <- ra.cur.b[:cap(ra.cur.b)]
		}
		ra.cur = <-ra.full
		ra.off = 0
	}
	n := copy(p, ra.cur.b[ra.off:])
	ra.off += n
	return n, nil
}

func (ra *readahead) Close() error {
	ra.once.Do(func() {
		// The producer never blocks on full (it holds at most as many
		// buffers as full has room for), so it sees quit promptly.
		close(ra.quit)
		ra.wg.Wait()
	})
	return nil
}
