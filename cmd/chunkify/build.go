package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/internal/usage"
)

func newBuildCmd() *cobra.Command {
	var (
		out, format, chunkSize, selfLoops string
		memory                            string
		numNodes                          uint32
		o                                 ingest.BuildOptions
		quiet, asJSON                     bool
		het                               heteroFlags
	)
	cmd := &cobra.Command{
		Use:   "build (INPUT... | --relation SRC,REL,DST=PATH... --node-types T=N,... | --ogb-raw DIR) -o DIR",
		Short: "Build a chunked CSR graph directory from edge lists",
		Long: `Build reads edge lists and writes a graph directory (edges.chunks,
chunks.info, manifest.json).

Inputs: text edge lists (whitespace or comma separated, # or % comments, LF
or CRLF, an optional header line such as id_1,id_2), little-endian uint32 or
uint64 pairs (--format bin32|bin64, or the extensions .bin32/.bin64), and
NumPy .npy integer arrays of shape (2, E) or (E, 2); any of them gzip or
zstd compressed. "-" reads standard input.

--chunk-size takes binary units (KiB, MiB, GiB: 1MiB = 1048576 bytes) or
decimal ones (kB, MB, GB: 1MB = 1000000 bytes, which is not a multiple of
512: use MiB).

--memory is the build's memory budget (default: the memory available when
it starts). A build needs 12 bytes per node (the degree and offset arrays),
plus the chunk being written and some buffers; the edges live in temporary
files. A --num-nodes, or a largest node id, whose figure exceeds the budget
is refused before anything is allocated.

Temporary files live in a hidden directory beside the output
(.NAME.tmp-PID-...), removed on failure, Ctrl-C and SIGTERM. One left by a
build that was killed outright is removed by the next build of the same
output once its process is gone.

A heterogeneous graph (docs/FORMAT.md, "Heterogeneous graph directories")
is built from one edge list per relation, --relation SRC,REL,DST=PATH
(repeated; pairs of local ids: column 1 of the SRC type, column 2 of the
DST type), with the node types' counts, --node-types T=N,... or a
num-node-dict CSV; or from OGB's heterogeneous raw layout, --ogb-raw DIR
(num-node-dict.csv.gz, relations/SRC___REL___DST/edge.csv.gz, and the
node-feat/node-label files, packed per node type). Each relation is
stored as in-edges (rows: DST nodes) under relations/SRC___REL___DST/,
built one after another; hetero.json is written last. --add-reverse adds
(DST, rev_REL, SRC) for each relation between two types and stores one
within a type in both directions, as PyG's ToUndirected does.
--node-features T=PATH and --node-labels T=PATH pack a type's features.`,
		Example: `  chunkify build testdata/email-Eu-core.txt.gz -o out/email --chunk-size 16KiB
  chunkify build edges.csv -o out/g --symmetrize --num-nodes 2708 --chunk-size 64KiB
  zcat edges.txt.gz | chunkify build - -o out/g --json
  chunkify build --ogb-raw testdata/hetero-mini -o out/mini --add-reverse --chunk-size 16KiB
  chunkify build --node-types author=100,paper=50 --relation author,writes,paper=writes.csv -o out/h`,
		Args: func(cmd *cobra.Command, args []string) error {
			if het.set() {
				if len(args) > 0 {
					return usage.Errorf("build: a heterogeneous build takes its inputs from --relation or --ogb-raw, not as arguments (%q)", args[0])
				}
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usage.Errorf("build: -o DIR is required")
			}
			f, err := ingest.ParseFormat(format)
			if err != nil {
				return usage.Errorf("build: --format: %w", err)
			}
			o.Format = f
			cs, err := parseChunkSize(chunkSize)
			if err != nil {
				return err
			}
			if note := decimalSizeNote(chunkSize, cs); note != "" && !quiet {
				fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: note: %s\n", note)
			}
			o.ChunkSize = cs
			if selfLoops != chunkfmt.SelfLoopsKeep && selfLoops != chunkfmt.SelfLoopsDrop {
				return usage.Errorf("build: --self-loops %q: want keep or drop", selfLoops)
			}
			if numNodes > chunkfmt.MaxNodes {
				return usage.Errorf("build: --num-nodes %d: more than the maximum %d nodes", numNodes, chunkfmt.MaxNodes)
			}
			if o.Memory, err = parseMemory(memory); err != nil {
				return err
			}
			o.SelfLoops = selfLoops
			o.NumNodes = numNodes
			o.Progress = stderrTTY(cmd, quiet)
			o.CreatedBy = "chunkify"
			if het.set() {
				for _, f := range []string{"num-nodes", "symmetrize", "reverse"} {
					if cmd.Flags().Changed(f) {
						return usage.Errorf("build: --%s is for a homogeneous graph; a heterogeneous build stores each relation's in-edges with its node types' counts", f)
					}
				}
				return runHeteroBuild(cmd, &het, out, o, quiet, asJSON)
			}
			if het.addReverse {
				return usage.Errorf("build: --add-reverse is for --relation or --ogb-raw (a homogeneous graph: --symmetrize)")
			}
			sum, err := ingest.Build(cmd.Context(), args, out, o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				// The I/O counters are read last, so that they cover the
				// whole build, output files closed and synced.
				if err := enc.Encode(buildJSON{Summary: sum, IO: selfIO()}); err != nil {
					return err
				}
			}
			if !quiet {
				for _, d := range sum.StaleRemoved {
					fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: removed %s, left by an earlier build that was killed\n", d)
				}
				fmt.Fprintln(cmd.ErrOrStderr(), buildSummaryLine(sum))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "", "output graph directory (required)")
	fl.StringVar(&format, "format", "auto", "input format: auto|text|bin32|bin64|npy (auto: npy by magic or extension, .bin32/.bin64 by extension, else text)")
	fl.Uint32Var(&numNodes, "num-nodes", 0, "number of nodes (default: largest id + 1); ids must be below it")
	fl.BoolVar(&o.Symmetrize, "symmetrize", false, "store every edge in both directions")
	fl.BoolVar(&o.Reverse, "reverse", false, "store in-neighbors (v→u), as DGL samples in-edges")
	fl.BoolVar(&o.Dedup, "dedup", true, "remove duplicate neighbors")
	fl.StringVar(&selfLoops, "self-loops", "keep", "keep|drop self-loops")
	fl.StringVar(&chunkSize, "chunk-size", "512MiB", "chunk size, a multiple of 512 bytes: KiB, MiB, GiB are binary (1MiB = 1048576), kB, MB, GB decimal (1MB = 1000000)")
	fl.StringVar(&memory, "memory", "auto", "memory budget of the build, a size such as 8GiB; auto: the memory available when the build starts")
	fl.BoolVar(&o.Force, "force", false, "replace an existing output directory once the new graph is complete")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress and no summary line")
	fl.BoolVar(&asJSON, "json", false, "print a JSON summary on stdout (with the process's /proc/self/io counters, where there are any)")
	het.add(fl)
	return cmd
}

// parseChunkSize parses --chunk-size: a positive multiple of
// chunkfmt.SectorSize bytes. A decimal unit that misses the multiple is
// the likely slip (1MB for 1MiB), so the error says what it is in bytes.
func parseChunkSize(s string) (int64, error) {
	cs, err := ingest.ParseSize(s)
	if err != nil {
		return 0, usage.Errorf("build: --chunk-size: %w", err)
	}
	if cs <= 0 || cs%chunkfmt.SectorSize != 0 {
		msg := fmt.Sprintf("build: --chunk-size %s: must be a positive multiple of %d bytes", s, chunkfmt.SectorSize)
		if decimalUnit(s) {
			msg += fmt.Sprintf("; %s is decimal, %d bytes (use KiB, MiB or GiB for binary units)", strings.TrimSpace(s), cs)
		}
		return 0, usage.Errorf("%s", msg)
	}
	return cs, nil
}

// parseMemory parses --memory: "auto" (0: ingest's default, the available
// memory) or a positive size.
func parseMemory(s string) (int64, error) {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return 0, nil
	}
	n, err := ingest.ParseSize(s)
	if err != nil {
		return 0, usage.Errorf("build: --memory: %w", err)
	}
	if n <= 0 {
		return 0, usage.Errorf("build: --memory %s: want a positive size such as 8GiB, or auto", s)
	}
	return n, nil
}

// decimalUnit reports whether size string s ends in a decimal unit (kB,
// MB, GB, TB) rather than a binary one (KiB, MiB, …) or none.
func decimalUnit(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	return len(t) >= 2 && t[len(t)-1] == 'b' && strings.ContainsRune("kmgt", rune(t[len(t)-2]))
}

// decimalSizeNote is the note printed when --chunk-size was given in a
// decimal unit and accepted: a reader of "512MB" may expect 512 MiB.
func decimalSizeNote(s string, n int64) string {
	if !decimalUnit(s) {
		return ""
	}
	t := strings.TrimSpace(s)
	return fmt.Sprintf("--chunk-size %s is decimal: %d bytes (%s)", t, n, progress.Bytes(n))
}

func buildSummaryLine(s *ingest.Summary) string {
	rate := 0.0
	if s.Seconds > 0 {
		rate = float64(s.InputEdges) / s.Seconds
	}
	chunks := "chunks"
	if s.NumChunks == 1 {
		chunks = "chunk"
	}
	return fmt.Sprintf("chunkify: built %s: %d nodes, %d edges stored (%d read), %d %s of %s, max degree %d, in %.2fs (%s edges/s, %s/s)",
		s.Dir, s.NumNodes, s.NumEdges, s.InputEdges, s.NumChunks, chunks, progress.Bytes(s.ChunkSize), s.MaxDegree,
		s.Seconds, progress.Count(rate), progress.Bytes(int64(float64(s.InputBytes)/max(s.Seconds, 1e-9))))
}
