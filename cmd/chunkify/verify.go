package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

func newVerifyCmd() *cobra.Command {
	var quiet bool
	var graph graphDirArg
	cmd := &cobra.Command{
		Use:   "verify DIR | --graph DIR",
		Short: "Check a graph directory; exit non-zero and print the first defect",
		Example: `  chunkify verify out/email
  chunkify verify --graph out/email -q && echo sound`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := graph.dir(cmd, args)
			if err != nil {
				return err
			}
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
	graph.add(cmd)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing when the graph is sound")
	return cmd
}
