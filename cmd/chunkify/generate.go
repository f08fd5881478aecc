package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/internal/usage"
)

func newGenerateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "generate GENERATOR",
		Short:   "Generate synthetic graphs and node features",
		Example: `  chunkify generate rmat --scale 20 --edge-factor 16 --seed 1 -o rmat-20.bin32`,
		Args:    cobra.ArbitraryArgs,
		// Without a RunE cobra would print the help and exit 0 for an
		// unknown generator.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage.Errorf("generate: unknown generator %q (want rmat, features or hetero)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newRMATCmd(), newFeaturesGenCmd(), newHeteroGenCmd())
	return cmd
}

func newRMATCmd() *cobra.Command {
	var (
		o           ingest.RMATOptions
		out, format string
		quiet       bool
	)
	cmd := &cobra.Command{
		Use:   "rmat --scale S --edge-factor F --seed N -o FILE",
		Short: "Write an R-MAT graph (Graph500 parameters a=.57 b=.19 c=.19 d=.05): 2^S nodes, F·2^S edges",
		Example: `  chunkify generate rmat --scale 20 --edge-factor 16 --seed 1 -o rmat-20.bin32
  chunkify generate rmat --scale 10 -o small.txt -q`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usage.Errorf("generate rmat: -o FILE is required")
			}
			if o.Scale < 1 || o.Scale > 30 {
				return usage.Errorf("generate rmat: --scale %d: want 1..30", o.Scale)
			}
			if o.EdgeFactor < 1 {
				return usage.Errorf("generate rmat: --edge-factor %d: want at least 1", o.EdgeFactor)
			}
			f, err := ingest.ParseFormat(format)
			if err != nil {
				return usage.Errorf("generate rmat: --format: %w", err)
			}
			if f == ingest.FormatNPY {
				return usage.Errorf("generate rmat: --format npy: want text, bin32 or bin64")
			}
			t0 := time.Now()
			if err := ingest.WriteRMATFile(cmd.Context(), out, o, f); err != nil {
				return err
			}
			if !quiet {
				sec := time.Since(t0).Seconds()
				fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: wrote %s: R-MAT scale %d, edge factor %d, seed %d: %d nodes, %d edges in %.2fs (%s edges/s)\n",
					out, o.Scale, o.EdgeFactor, o.Seed, int64(1)<<o.Scale, o.NumEdges(), sec, progress.Count(float64(o.NumEdges())/max(sec, 1e-9)))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Scale, "scale", 0, "log2 of the number of nodes (1..30)")
	fl.IntVar(&o.EdgeFactor, "edge-factor", 16, "edges per node")
	fl.Uint64Var(&o.Seed, "seed", 1, "random seed; the output is a pure function of the flags")
	fl.BoolVar(&o.NoScramble, "no-scramble", false, "keep raw R-MAT ids (hubs at low ids) instead of Graph500's scrambled ids")
	fl.StringVarP(&out, "output", "o", "", "output file (written atomically)")
	fl.StringVar(&format, "format", "auto", "text|bin32|bin64 (auto: by extension .bin32/.bin64, else text)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no summary line")
	cmd.MarkFlagRequired("scale")
	return cmd
}

func newFeaturesGenCmd() *cobra.Command {
	var (
		o                  ingest.FeatureGenOptions
		out, labels, dtype string
		graph              string
		numNodes           uint32
		quiet              bool
	)
	cmd := &cobra.Command{
		Use:   "features (--num-nodes N | --graph DIR) --dim D [--dtype float32] [--classes C --labels FILE] -o FILE.npy",
		Short: "Write a seeded synthetic node-feature matrix (.npy, any size, streamed) and labels",
		Long: `features writes a [num_nodes, dim] .npy matrix of float32, float16, int8 or
uint8 whose rows are a pure function of --seed and the node (uniform noise
in [-1, 1), narrowed to the dtype), for benchmarks at any size: it is
generated on every core and streamed, never held whole. With --classes C
every node also gets a label in [0, C) and its row a +1 in column
label mod dim, so that a model can learn the labels; --labels writes them
as an int32 .npy. Pack both with chunkify features.`,
		Example: `  chunkify generate features --graph g --dim 128 --classes 16 --labels labels.npy -o feat.npy
  chunkify generate features --num-nodes 4194304 --dim 128 --dtype float16 -o feat16.npy -q`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usage.Errorf("generate features: -o FILE is required")
			}
			switch {
			case graph != "" && numNodes != 0:
				return usage.Errorf("generate features: give --num-nodes or --graph, not both")
			case graph != "":
				m, err := chunkfmt.ReadManifest(graph)
				if err != nil {
					return err
				}
				numNodes = m.NumNodes
			case numNodes == 0:
				return usage.Errorf("generate features: --num-nodes N or --graph DIR is required")
			}
			dt, err := featstore.ParseDType(dtype)
			if err != nil {
				return usage.Errorf("generate features: --dtype: %w", err)
			}
			if o.Dim < 1 || o.Dim > featstore.MaxDim {
				return usage.Errorf("generate features: --dim %d: want 1..%d", o.Dim, featstore.MaxDim)
			}
			if o.Classes < 0 || (labels != "" && o.Classes == 0) {
				return usage.Errorf("generate features: --labels needs --classes C > 0")
			}
			o.NumNodes, o.DType = numNodes, dt
			total := int64(numNodes) * int64(o.Dim) * int64(dt.Size())
			w := stderrTTY(cmd, quiet)
			o.Progress = progress.New(w, total, "generating features", w != nil)
			t0 := time.Now()
			err = ingest.WriteSyntheticFeatures(cmd.Context(), out, labels, o)
			o.Progress.Done()
			if err != nil {
				return err
			}
			if !quiet {
				sec := time.Since(t0).Seconds()
				fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: wrote %s: %d × %d %s (%s), seed %d, in %.2fs (%s/s)\n",
					out, numNodes, o.Dim, dt, progress.Bytes(total), o.Seed, sec, progress.Bytes(int64(float64(total)/max(sec, 1e-9))))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Uint32Var(&numNodes, "num-nodes", 0, "rows (nodes)")
	fl.StringVar(&graph, "graph", "", "take the number of rows from this graph directory")
	fl.IntVar(&o.Dim, "dim", 128, "features per node")
	fl.StringVar(&dtype, "dtype", "float32", "float32|float16|int8|uint8")
	fl.Uint64Var(&o.Seed, "seed", 1, "random seed; the output is a pure function of the flags")
	fl.IntVar(&o.Classes, "classes", 0, "give every node a label in [0, C) that its features reveal")
	fl.StringVar(&labels, "labels", "", "also write the labels (int32 .npy) here (needs --classes)")
	fl.StringVarP(&out, "output", "o", "", "output .npy file (written atomically)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress and no summary line")
	return cmd
}
