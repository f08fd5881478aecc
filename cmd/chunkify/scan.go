package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/internal/usage"
)

func newScanCmd() *cobra.Command {
	var (
		format        string
		numNodes      uint32
		quiet, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "scan INPUT...",
		Short: "Check that edge lists parse, and count their edges, largest id and self-loops",
		Long: `Scan reads edge lists exactly as build's first pass does — every format,
compression and check of build, with the same errors naming the file and
line — but writes nothing. It tells in the time the parser alone takes
whether a long build will get past its input, and how many nodes and edges
the input holds; its rate (input bytes / seconds) is the text parser's.`,
		Example: `  chunkify scan testdata/email-Eu-core.txt.gz
  chunkify scan edges.csv --num-nodes 2708 --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ingest.ParseFormat(format)
			if err != nil {
				return usage.Errorf("scan: --format: %w", err)
			}
			if numNodes > chunkfmt.MaxNodes {
				return usage.Errorf("scan: --num-nodes %d: more than the maximum %d nodes", numNodes, chunkfmt.MaxNodes)
			}
			w := stderrTTY(cmd, quiet)
			bar := progress.New(w, 0, "scanning", w != nil)
			sum, err := ingest.Scan(cmd.Context(), args, f, numNodes, bar)
			bar.Done()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			if !quiet {
				fmt.Fprintln(cmd.OutOrStdout(), scanSummaryLine(sum))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "auto", "input format: auto|text|bin32|bin64|npy (as build)")
	fl.Uint32Var(&numNodes, "num-nodes", 0, "number of nodes: every id must be below it (default: ids below the format's limit)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress and no summary line")
	fl.BoolVar(&asJSON, "json", false, "print a JSON summary on stdout")
	return cmd
}

// scanSummaryLine is scan's one-line report.
func scanSummaryLine(s *ingest.ScanSummary) string {
	nodes := "no edges"
	if s.MaxID >= 0 {
		nodes = fmt.Sprintf("largest node id %d", s.MaxID)
	}
	rate := ""
	if s.Seconds > 0 && s.InputBytes > 0 {
		rate = fmt.Sprintf(", %s/s", progress.Bytes(int64(float64(s.InputBytes)/s.Seconds)))
	}
	return fmt.Sprintf("%d edges, %s, %d self-loops in %.2fs%s", s.Edges, nodes, s.SelfLoops, s.Seconds, rate)
}
