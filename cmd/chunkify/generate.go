package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/internal/usage"
)

func newGenerateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "generate GENERATOR",
		Short:   "Generate synthetic graphs",
		Example: `  chunkify generate rmat --scale 20 --edge-factor 16 --seed 1 -o rmat-20.bin32`,
		Args:    cobra.ArbitraryArgs,
		// Without a RunE cobra would print the help and exit 0 for an
		// unknown generator.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage.Errorf("generate: unknown generator %q (want rmat)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newRMATCmd())
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
