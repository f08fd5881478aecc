package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/internal/npy"
	"github.com/streamsampler/streamsampler/internal/usage"
)

// exportFormats are export's --format values and their files' names:
// indptr then indices.
var exportFormats = map[string][2]string{
	"npy": {"indptr.npy", "indices.npy"},
	"raw": {"indptr.bin", "indices.bin"},
}

func newExportCmd() *cobra.Command {
	var (
		out, format  string
		force, quiet bool
		graph        graphDirArg
	)
	cmd := &cobra.Command{
		Use:   "export DIR -o OUTDIR | --graph DIR -o OUTDIR",
		Short: "Write a graph directory back out as plain CSR arrays (indptr, indices)",
		Long: `Export writes the graph's CSR as two arrays for tools that take plain CSR
(scipy.sparse, DGL's graph from CSR, io_uring samplers): indptr
(num_nodes+1 uint64: node v's neighbors are indices[indptr[v]:indptr[v+1]])
and indices (num_edges uint32), little-endian, as NumPy .npy files
(--format npy: OUTDIR/indptr.npy, OUTDIR/indices.npy) or headerless
(--format raw: indptr.bin, indices.bin). The neighbors are the stored
ones: in-neighbors unless the graph was built with --reverse, deduplicated
and symmetrized as built (chunkify info shows the options).

Every chunk is CRC-checked as it is read, and the graph is streamed: what
is held is indptr (8 bytes per node) and one chunk. Each file is written to
a temporary beside it and renamed once complete; an existing file is
replaced only with --force.`,
		Example: `  chunkify export out/email -o out/email-csr
  chunkify export --graph out/g -o /data/g-csr --format raw --force`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := graph.dir(cmd, args)
			if err != nil {
				return err
			}
			names, ok := exportFormats[format]
			if !ok {
				return usage.Errorf("export: --format %q: want npy or raw", format)
			}
			if out == "" {
				return usage.Errorf("export: -o OUTDIR is required")
			}
			return exportCSR(cmd, dir, out, format, names, force, quiet)
		},
	}
	graph.add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "directory to write the arrays to (made if missing)")
	cmd.Flags().StringVar(&format, "format", "npy", "npy (NumPy .npy files) or raw (headerless little-endian arrays)")
	cmd.Flags().BoolVar(&force, "force", false, "replace existing output files")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no summary line on stderr")
	return cmd
}

func exportCSR(cmd *cobra.Command, dir, out, format string, names [2]string, force, quiet bool) error {
	g, err := chunkfmt.Open(dir)
	if err != nil {
		return err
	}
	defer g.Close()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	paths := [2]string{filepath.Join(out, names[0]), filepath.Join(out, names[1])}
	if !force {
		for _, p := range paths {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("export: %s exists (--force replaces it)", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	start := time.Now()
	m := g.Manifest
	var indptr []uint64
	err = writeAtomic(paths[1], func(w io.Writer) error {
		if format == "npy" {
			if _, err := (npy.Header{Descr: npy.Descr[uint32](), Shape: []int{int(m.NumEdges)}}).WriteTo(w); err != nil {
				return err
			}
		}
		var err error
		indptr, err = g.WriteIndices(cmd.Context(), w)
		return err
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", dir, err)
	}
	err = writeAtomic(paths[0], func(w io.Writer) error {
		if format == "npy" {
			return npy.WriteArray(w, indptr)
		}
		if hostorder.LittleEndian {
			_, err := w.Write(hostorder.Bytes(indptr))
			return err
		}
		return errors.New("raw export needs a little-endian host")
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", dir, err)
	}
	if !quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: exported %s to %s: %d nodes, %d edges (%s, %s), in %.2fs\n",
			dir, out, m.NumNodes, m.NumEdges, names[0], names[1], time.Since(start).Seconds())
	}
	return nil
}

// writeAtomic writes path through a temporary beside it (fsynced, renamed
// over path once write returns nil; removed otherwise).
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		f.Abort()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
