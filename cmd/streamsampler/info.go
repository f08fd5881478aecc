package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/streamsampler/streamsampler/statedir"
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
		Long: `info checks the whole state directory (refusing one whose parts disagree),
removes what interrupted runs left there (naming each on stderr; "removed" in
JSON) unless another command holds the directory, and prints the
configuration, the current epoch and each prepared epoch's size.`,
		Example: `  streamsampler info --state st
  streamsampler info --state st --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := statedir.State{Dir: state}
			// A directory that is not there is not a state directory.
			if err := requireDir(st); err != nil {
				return err
			}
			c, removed, kept, err := st.Inspect()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !asJSON {
				for _, l := range removed {
					reportRemoved(cmd.ErrOrStderr(), st, l)
				}
				for _, l := range kept {
					fmt.Fprintf(cmd.ErrOrStderr(), "left %s: %s (not removed: the directory is in use)\n", filepath.Join(st.Dir, l.Name), l.Why)
				}
			}
			if !c.Committed {
				if asJSON && len(removed) > 0 {
					writeJSONLine(w, map[string]any{"removed": leftoverNames(removed)})
				}
				return notStateDir(st)
			}
			cfg, cur, hasCur := c.Config, c.Current, c.HasCurrent
			var eps []epochInfo
			for _, n := range c.Prepared {
				b, err := st.EpochBytes(n)
				if err != nil {
					return err
				}
				eps = append(eps, epochInfo{Epoch: n, Bytes: b, Current: hasCur && n == cur})
			}
			graphNote := "ok"
			if _, err := st.ReadGraph(cfg); err != nil {
				graphNote = err.Error()
			}
			if asJSON {
				var curv any
				if hasCur {
					curv = cur
				}
				return writeJSONLine(w, map[string]any{"config": cfg, "current": curv, "epochs": eps, "graph_check": graphNote,
					"removed": leftoverNames(removed), "leftovers": leftoverNames(kept)})
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

// leftoverNames lists leftovers' names for JSON (never null).
func leftoverNames(ls []statedir.Leftover) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}
