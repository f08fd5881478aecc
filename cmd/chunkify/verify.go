package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
)

func newVerifyCmd() *cobra.Command {
	var quiet bool
	var graph graphDirArg
	cmd := &cobra.Command{
		Use:   "verify DIR | --graph DIR",
		Short: "Check a graph directory (homogeneous or heterogeneous) and its feature stores; exit non-zero and print the first defect",
		Example: `  chunkify verify out/email
  chunkify verify --graph out/email -q && echo sound`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := graph.dir(cmd, args)
			if err != nil {
				return err
			}
			if isHetero(dir) {
				return verifyHetero(cmd.Context(), cmd.OutOrStdout(), dir, quiet)
			}
			if err := chunkfmt.VerifyContext(cmd.Context(), dir); err != nil {
				return fmt.Errorf("verify %s: %w", dir, err)
			}
			features := "no feature store"
			switch err := featstore.VerifyContext(cmd.Context(), dir); {
			case errors.Is(err, featstore.ErrNoFeatures):
			case err != nil:
				return fmt.Errorf("verify %s: feature store: %w", dir, err)
			default:
				fm, err := featstore.ReadManifest(dir)
				if err != nil {
					return err
				}
				features = fmt.Sprintf("features ok: %d × %d %s", fm.NumNodes, fm.Features.Dim, fm.Features.DType)
				if l := fm.Labels; l != nil {
					features += fmt.Sprintf(", labels ok: %d labeled, %d classes", l.Labeled, l.NumClasses)
				}
			}
			if !quiet {
				m, err := chunkfmt.ReadManifest(dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d nodes, %d edges, %d chunks; %s)\n", dir, m.NumNodes, m.NumEdges, len(m.Chunks), features)
			}
			return nil
		},
	}
	graph.add(cmd)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing when the graph is sound")
	return cmd
}
