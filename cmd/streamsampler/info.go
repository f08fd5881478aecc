package main

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/epoch"
)

// epochInfo describes one prepared epoch directory.
type epochInfo struct {
	Epoch   uint32 `json:"epoch"`
	Bytes   int64  `json:"bytes"`
	Current bool   `json:"current"`
}

func newInfoCmd() *cobra.Command {
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info --state STATEDIR",
		Short: "Show a state directory: configuration, current epoch, prepared epochs and their sizes",
		Example: `  streamsampler info --state st
  streamsampler info --state st --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := epoch.State{Dir: state}
			cfg, err := loadStateConfig(st)
			if err != nil {
				return err
			}
			cur, hasCur, err := st.Current()
			if err != nil {
				return err
			}
			prep, err := st.Prepared()
			if err != nil {
				return err
			}
			var eps []epochInfo
			for _, n := range prep {
				b, err := dirBytes(st.EpochDir(n))
				if err != nil {
					return err
				}
				eps = append(eps, epochInfo{Epoch: n, Bytes: b, Current: hasCur && n == cur})
			}
			graphNote := "ok"
			if err := checkStateGraph(st, cfg); err != nil {
				graphNote = err.Error()
			}
			w := cmd.OutOrStdout()
			if asJSON {
				var c any
				if hasCur {
					c = cur
				}
				return writeJSONLine(w, map[string]any{"config": cfg, "current": c, "epochs": eps, "graph_check": graphNote})
			}
			fmt.Fprintf(w, "state    %s\ngraph    %s (%d nodes, %d edges, %d chunks; check: %s)\ntrain    %s\nfanouts  %v\nseed     %d  replace %v  rank %d of %d  compress %q\n",
				state, cfg.Graph, cfg.Fingerprint.NumNodes, cfg.Fingerprint.NumEdges, cfg.Fingerprint.Chunks, graphNote,
				cfg.Train, cfg.Fanouts, cfg.Seed, cfg.Replace, cfg.Rank, cfg.WorldSize, cfg.Compress)
			if hasCur {
				fmt.Fprintf(w, "current  epoch %d\n", cur)
			} else {
				fmt.Fprintf(w, "current  none (run advance)\n")
			}
			for _, e := range eps {
				mark := ""
				if e.Current {
					mark = "  (current)"
				}
				fmt.Fprintf(w, "epoch %d  %s%s\n", e.Epoch, mib(e.Bytes), mark)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.MarkFlagRequired("state")
	return cmd
}

func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
