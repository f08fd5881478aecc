package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/progress"
)

// ReadOptions says how to read one edge input.
type ReadOptions struct {
	// Format of the decompressed bytes; FormatAuto detects it.
	Format Format
	// NumNodes, when non-zero, is the number of nodes: every id must be
	// below it. Zero means ids must be below chunkfmt.MaxNodes.
	NumNodes uint32
	// Progress, when non-nil, counts the raw (compressed) bytes read.
	Progress *progress.Bar
	// Name is how errors name the input; the path when empty.
	Name string
	// DropBehind hands the input's page cache back to the kernel as it is
	// read (posix_fadvise DONTNEED behind the read offset): for an input
	// read once, or larger than the memory that could keep it cached
	// until it is read again, whose cached pages would only push out
	// memory worth keeping — in a memory cgroup they count against the
	// limit and cost reclaim on every further read. A hint.
	DropBehind bool
}

func (o ReadOptions) limit() (uint64, bool) {
	if o.NumNodes > 0 {
		return uint64(o.NumNodes), true
	}
	return chunkfmt.MaxNodes, false
}

type pairSource interface {
	Next() ([]uint32, error)
	Close() error
}

// EdgeReader reads the edges of one input in batches.
type EdgeReader struct {
	src     pairSource
	streams []*stream
	format  Format
}

// OpenEdges opens an edge input: text, bin32, bin64 or npy, optionally
// gzip- or zstd-compressed.
func OpenEdges(path string, o ReadOptions) (*EdgeReader, error) {
	name := o.Name
	if name == "" {
		name = path
	}
	s, err := openStream(path, name, o.Progress, o.DropBehind)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return nil, err
		}
		return nil, fmt.Errorf("open edge list: %w", err)
	}
	format := o.Format
	if format == FormatAuto {
		format = formatByName(path)
	}
	if format == FormatAuto {
		format = FormatText
		if head, _ := s.r.Peek(len(magicNPY)); bytes.Equal(head, magicNPY) {
			format = FormatNPY
		}
	}
	limit, given := o.limit()
	er := &EdgeReader{streams: []*stream{s}, format: format}
	switch format {
	case FormatText:
		er.src = newTextSource(s.unbuffered(), name, limit, given)
	case FormatBin32:
		er.src = newBinSource(name, s.r, nil, 4, false, -1, limit, given)
	case FormatBin64:
		er.src = newBinSource(name, s.r, nil, 8, false, -1, limit, given)
	case FormatNPY:
		h, err := readNPYHeader(s.r, name)
		if err != nil {
			er.Close()
			return nil, err
		}
		edges, split, err := h.edgeLayout(name)
		if err != nil {
			er.Close()
			return nil, err
		}
		var b io.Reader
		if split && edges > 0 {
			s2, err := openAt(path, name, h.size+edges*int64(h.width))
			if err != nil {
				er.Close()
				return nil, err
			}
			er.streams = append(er.streams, s2)
			b = s2.r
		}
		if !split || edges == 0 {
			er.src = newBinSource(name, s.r, nil, h.width, h.signed, edges, limit, given)
		} else {
			er.src = newBinSource(name, s.r, b, h.width, h.signed, edges, limit, given)
		}
	default:
		er.Close()
		return nil, fmt.Errorf("%s: unknown format %v", name, format)
	}
	if _, ok := er.src.(*binSource); ok {
		er.src = newPrefetch(er.src, 2)
	}
	return er, nil
}

// openAt opens path's decompressed stream positioned at off, seeking when
// the file is not compressed. Its bytes are not counted for progress: the
// first stream's position already says how far the input is read.
func openAt(path, name string, off int64) (*stream, error) {
	s, err := openStream(path, name, nil, false)
	if err != nil {
		return nil, err
	}
	if s.comp == compNone {
		f, err := os.Open(path)
		s.Close()
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &stream{r: bufio.NewReaderSize(f, readBufSize), under: f, name: name, closers: []func() error{f.Close}}, nil
	}
	if _, err := io.CopyN(io.Discard, s.r, off); err != nil {
		s.Close()
		return nil, &InputError{File: name, Record: -1, Msg: "npy: truncated data", Err: ErrSyntax}
	}
	return s, nil
}

// Format is the format the input was read as.
func (r *EdgeReader) Format() Format { return r.format }

// Next returns the next batch of edges as interleaved (src, dst) pairs,
// valid until the next call, or io.EOF after the last. Every id has been
// checked against the id limit.
func (r *EdgeReader) Next() ([]uint32, error) { return r.src.Next() }

// Close releases the input and the reader's goroutines.
func (r *EdgeReader) Close() error {
	var first error
	if r.src != nil {
		first = r.src.Close()
	}
	for _, s := range r.streams {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
