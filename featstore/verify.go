package featstore

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// Verify checks the feature store of graph directory dir completely: the
// manifest (its checksum and consistency), its match with the graph, the
// data files' sizes, their checksums' files, every row's and label page's
// CRC-32C, and every label. The first defect is returned as a *DefectError
// (ErrCorrupt); a directory without a store gives an error wrapping
// ErrNoFeatures.
func Verify(dir string) error { return VerifyContext(context.Background(), dir) }

// VerifyContext is Verify, stopping early when ctx is cancelled.
func VerifyContext(ctx context.Context, dir string) error {
	s, err := Open(dir)
	if err != nil {
		return err
	}
	return verifyStore(ctx, s)
}

// VerifyFor is VerifyContext for a store bound to fp (OpenFor).
func VerifyFor(ctx context.Context, dir string, fp chunkfmt.Fingerprint) error {
	s, err := OpenFor(dir, fp)
	if err != nil {
		return err
	}
	return verifyStore(ctx, s)
}

// verifyStore checks every span of the opened store s, and closes it.
func verifyStore(ctx context.Context, s *Store) error {
	defer s.Close()
	if err := verifyFile(ctx, s.feat, s.featSum, nil); err != nil {
		return err
	}
	if s.m.Labels != nil {
		return verifyFile(ctx, s.lab, s.labSum, s.m.Labels)
	}
	return nil
}

// verifyPiece is about what verifyFile reads at once: 4 MiB, in whole
// spans.
const verifyPiece = 4 << 20

// verifyFile checks every span of one data file, read from r, against c;
// labels, when not nil, says that it is the label file and what its
// values must be.
func verifyFile(ctx context.Context, r io.ReaderAt, c *Checksums, labels *Labels) error {
	df := c.df
	piece := max(1, verifyPiece/df.CRCSpan) * df.CRCSpan
	buf := make([]byte, min(piece, df.Size))
	var labeled uint32
	maxLab := NoLabel
	for off := int64(0); off < df.Size; off += piece {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := buf[:min(piece, df.Size-off)]
		if err := readFull(r, df, b, off); err != nil {
			return err
		}
		if err := c.Check(off, b); err != nil {
			return err
		}
		if labels == nil {
			continue
		}
		for k := 0; k+4 <= len(b); k += 4 {
			l := int32(binary.LittleEndian.Uint32(b[k:]))
			if err := labels.check((off+int64(k))/4, l); err != nil {
				return err
			}
			if l >= 0 {
				labeled++
				maxLab = max(maxLab, l)
			}
		}
	}
	if labels != nil && (labeled != labels.Labeled || int64(maxLab)+1 != labels.NumClasses) {
		return defect(df, -1, 0, -1, "%d labeled nodes, largest label %d; manifest says %d labeled, %d classes", labeled, maxLab, labels.Labeled, labels.NumClasses)
	}
	return nil
}

// checkSize reports a data file whose size is not its manifest's.
func checkSize(df *DataFile, size int64) error {
	if size == df.Size {
		return nil
	}
	what := "truncated"
	if size > df.Size {
		what = "too long"
	}
	return defect(df, -1, 0, -1, "%s: %d bytes, manifest says %d", what, size, df.Size)
}
