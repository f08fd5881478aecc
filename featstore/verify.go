package featstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Verify checks the feature store of graph directory dir completely: the
// manifest, its match with the graph, the data files' sizes, every
// block's CRC-32C, and every label. The first defect is returned as a
// *DefectError (ErrCorrupt); a directory without a store gives an error
// wrapping ErrNoFeatures.
func Verify(dir string) error { return VerifyContext(context.Background(), dir) }

// VerifyContext is Verify, stopping early when ctx is cancelled.
func VerifyContext(ctx context.Context, dir string) error {
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	if err := m.checkGraph(dir); err != nil {
		return err
	}
	check := func(df *DataFile, labels *Labels) error {
		f, err := os.Open(filepath.Join(dir, df.File))
		if err != nil {
			return fmt.Errorf("featstore: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("featstore: %w", err)
		}
		return VerifyFile(ctx, f, st.Size(), df, labels)
	}
	if err := check(&m.Features.DataFile, nil); err != nil {
		return err
	}
	if m.Labels != nil {
		return check(&m.Labels.DataFile, m.Labels)
	}
	return nil
}

// VerifyFile checks one data file, read from r whose size is size,
// against df; labels, when not nil, says that it is the label file and
// what its values must be.
func VerifyFile(ctx context.Context, r io.ReaderAt, size int64, df *DataFile, labels *Labels) error {
	if size != df.Size {
		what := "truncated"
		if size > df.Size {
			what = "too long"
		}
		return defect(df, -1, -1, "%s: %d bytes, manifest says %d", what, size, df.Size)
	}
	var buf []byte
	var labeled uint32
	maxLab := NoLabel
	for i := range df.Blocks() {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := readBlock(r, df, i, buf)
		if err != nil {
			return err
		}
		buf = b
		if labels == nil {
			continue
		}
		off, _ := df.BlockRange(i)
		for k := 0; k+4 <= len(b); k += 4 {
			l := int32(binary.LittleEndian.Uint32(b[k:]))
			if l < NoLabel || l >= labels.NumClasses {
				return defect(df, i, (off+int64(k))/4, "label %d: want %d (none) or 0..%d", l, NoLabel, labels.NumClasses-1)
			}
			if l >= 0 {
				labeled++
				maxLab = max(maxLab, l)
			}
		}
	}
	if labels != nil && (labeled != labels.Labeled || maxLab+1 != labels.NumClasses) {
		return defect(df, -1, -1, "%d labeled nodes, largest label %d; manifest says %d labeled, %d classes", labeled, maxLab, labels.Labeled, labels.NumClasses)
	}
	return nil
}
