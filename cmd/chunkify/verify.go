package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

func newVerifyCmd() *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a graph directory; exit non-zero and print the first defect",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := chunkfmt.VerifyContext(cmd.Context(), dir); err != nil {
				return fmt.Errorf("verify %s: %w", dir, err)
			}
			if !quiet {
				m, err := chunkfmt.ReadManifest(dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d nodes, %d edges, %d chunks)\n", dir, m.NumNodes, m.NumEdges, len(m.Chunks))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing when the graph is sound")
	return cmd
}
