package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/internal/usage"
)

func newFeaturesCmd() *cobra.Command {
	var (
		out, labels, dtype string
		nodeType           string
		dim                int
		force              bool
		quiet, asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "features FEATURES -o GRAPHDIR",
		Short: "Pack node features (and labels) into a graph directory's feature store",
		Long: `Features packs a node-feature matrix [num_nodes, dim], and optionally one
label per node, into the feature store of a graph directory made by build
(features-G.bin, labels-G.bin, features.json; docs/FORMAT.md). The matrix
must have one row per node of the graph, in node order.

Feature inputs: a NumPy .npy of float32, float16, int8 or uint8, 2-D and C
order; OGB's node-feat.csv (one comma-separated row of numbers per line,
stored as float32); raw little-endian rows with --dim and --dtype. Any of
them may be gzip or zstd compressed. They are streamed: a matrix larger
than memory is fine.

Labels (--labels): OGB's node-label.csv (one number per line; nan, empty
or -1 for a node without a label) or a 1-D .npy of int32, int64, float32
or float64 (NaN for none). Stored as int32, -1 for none.

features.json is written last and atomically: an interrupted run leaves no
store (or the old one, with --force), never a half-written one.

For a heterogeneous graph directory (hetero.json), --node-type T packs node
type T's store, GRAPHDIR/features/T/, one row per node of T in local-id
order, bound to the graph (docs/FORMAT.md, "Per-type features and labels").`,
		Example: `  chunkify features x.npy -o out/cora --labels y.npy
  chunkify features node-feat.csv.gz -o out/arxiv --labels node-label.csv.gz
  chunkify features x.f16 --dim 128 --dtype float16 -o out/g --force
  chunkify features paper-feat.npy -o out/mag --node-type paper --labels paper-label.npy`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usage.Errorf("features: -o GRAPHDIR is required")
			}
			o := ingest.FeatureOptions{Labels: labels, Dim: dim, Force: force, Progress: stderrTTY(cmd, quiet), CreatedBy: "chunkify"}
			if dim < 0 {
				return usage.Errorf("features: --dim %d: want a positive number of features per node", dim)
			}
			if dtype != "" {
				d, err := featstore.ParseDType(dtype)
				if err != nil {
					return usage.Errorf("features: --dtype %q: want float32, float16, int8 or uint8", dtype)
				}
				o.DType = d
			}
			if (dim == 0) != (dtype == "") {
				return usage.Errorf("features: raw rows need both --dim and --dtype (an .npy or .csv needs neither)")
			}
			dir := out
			switch {
			case heterofmt.Is(out):
				if nodeType == "" {
					return usage.Errorf("features: %s is a heterogeneous graph: give --node-type TYPE", out)
				}
				m, err := heterofmt.Read(out)
				if err != nil {
					return err
				}
				fp, ok := m.NodeTypeFingerprint(nodeType)
				if !ok {
					return usage.Errorf("features: --node-type %q: %s has no such node type", nodeType, out)
				}
				o.Graph = &fp
				dir = filepath.Join(out, filepath.FromSlash(heterofmt.FeatureDir(nodeType)))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				// A pack that fails leaves no store; nor the empty
				// directory made for it (Remove fails on a non-empty one).
				defer os.Remove(dir)
			case nodeType != "":
				return usage.Errorf("features: --node-type is for a heterogeneous graph directory (with hetero.json); %s has none", out)
			}
			sum, err := ingest.PackFeatures(cmd.Context(), args[0], dir, o)
			if err != nil {
				if o.Graph != nil {
					return fmt.Errorf("features: node type %s (%d nodes): %w", nodeType, o.Graph.NumNodes, err)
				}
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(sum); err != nil {
					return err
				}
			}
			if !quiet {
				fmt.Fprintln(cmd.ErrOrStderr(), featuresSummaryLine(sum))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "", "graph directory (made by build) to pack the store into (required)")
	fl.StringVar(&labels, "labels", "", "labels: node-label.csv(.gz) or a 1-D .npy")
	fl.IntVar(&dim, "dim", 0, "features per node, for raw rows")
	fl.StringVar(&dtype, "dtype", "", "element type of raw rows: float32|float16|int8|uint8")
	fl.BoolVar(&force, "force", false, "replace an existing feature store once the new one is complete")
	fl.StringVar(&nodeType, "node-type", "", "the node type whose store to pack, in a heterogeneous graph directory")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress and no summary line")
	fl.BoolVar(&asJSON, "json", false, "print a JSON summary on stdout")
	return cmd
}

func featuresSummaryLine(s *ingest.FeatureSummary) string {
	line := fmt.Sprintf("chunkify: packed %s into %s: %d rows × %d %s (%s, from %s)", s.Features, s.Dir, s.NumNodes, s.Dim, s.DType, progress.Bytes(s.Bytes), s.Format)
	if s.Labels != "" {
		line += fmt.Sprintf(", labels from %s: %d labeled, %d classes", s.Labels, s.Labeled, s.NumClasses)
	}
	rate := float64(s.Bytes) / max(s.Seconds, 1e-9)
	return line + fmt.Sprintf(", in %.2fs (%s/s)", s.Seconds, progress.Bytes(int64(rate)))
}
