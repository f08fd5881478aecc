package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/procio"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/internal/usage"
)

// heteroFlags are build's flags of a heterogeneous graph.
type heteroFlags struct {
	relations    []string
	nodeTypes    string
	ogbRaw       string
	addReverse   bool
	nodeFeatures []string
	nodeLabels   []string
}

func (h *heteroFlags) add(fl *pflag.FlagSet) {
	fl.StringArrayVar(&h.relations, "relation", nil, "heterogeneous: a relation's edge list, SRC,REL,DST=PATH (repeat for each relation)")
	fl.StringVar(&h.nodeTypes, "node-types", "", "heterogeneous: node types and counts, TYPE=COUNT,... or a num-node-dict CSV file (header of types, a line of counts)")
	fl.StringVar(&h.ogbRaw, "ogb-raw", "", "heterogeneous: an OGB heterogeneous dataset directory (raw/num-node-dict.csv.gz, raw/relations/SRC___REL___DST/edge.csv.gz, node-feat, node-label)")
	fl.BoolVar(&h.addReverse, "add-reverse", false, "heterogeneous: add (DST, rev_REL, SRC) for each relation between two types, and store a relation within one type both ways (PyG's ToUndirected)")
	fl.StringArrayVar(&h.nodeFeatures, "node-features", nil, "heterogeneous: a node type's features, TYPE=PATH (.npy, OGB csv; repeat per type)")
	fl.StringArrayVar(&h.nodeLabels, "node-labels", nil, "heterogeneous: a node type's labels, TYPE=PATH (needs --node-features of the type)")
}

func (h *heteroFlags) set() bool { return len(h.relations) > 0 || h.ogbRaw != "" || h.nodeTypes != "" }

// options turns the flags into ingest's options.
func (h *heteroFlags) options() (ingest.HeteroOptions, error) {
	var o ingest.HeteroOptions
	if h.ogbRaw != "" {
		if len(h.relations) > 0 || h.nodeTypes != "" {
			return o, usage.Errorf("build: --ogb-raw takes its node types and relations from the dataset: give no --relation or --node-types")
		}
		types, rels, feats, err := ingest.OGBHetero(h.ogbRaw)
		if err != nil {
			return o, err
		}
		o.NodeTypes, o.Relations, o.Features = types, rels, feats
	} else {
		if len(h.relations) == 0 {
			return o, usage.Errorf("build: --node-types needs --relation SRC,REL,DST=PATH for each relation")
		}
		if h.nodeTypes == "" {
			return o, usage.Errorf("build: --relation needs --node-types TYPE=COUNT,... (or a num-node-dict CSV)")
		}
		var err error
		if !strings.Contains(h.nodeTypes, "=") {
			o.NodeTypes, err = ingest.ReadNodeDict(h.nodeTypes)
		} else if o.NodeTypes, err = ingest.ParseNodeTypes(h.nodeTypes); err != nil {
			err = usage.Errorf("build: --node-types %w", err)
		}
		if err != nil {
			return o, err
		}
		for _, r := range h.relations {
			ri, err := ingest.ParseRelationFlag(r)
			if err != nil {
				return o, usage.Errorf("build: --relation %w", err)
			}
			o.Relations = append(o.Relations, ri)
		}
	}
	labels := map[string]string{}
	for _, l := range h.nodeLabels {
		t, p, ok := strings.Cut(l, "=")
		if !ok || p == "" {
			return o, usage.Errorf("build: --node-labels %q: want TYPE=PATH", l)
		}
		labels[t] = p
	}
	for _, f := range h.nodeFeatures {
		t, p, ok := strings.Cut(f, "=")
		if !ok || p == "" {
			return o, usage.Errorf("build: --node-features %q: want TYPE=PATH", f)
		}
		o.Features = append(o.Features, ingest.NodeFeatures{Type: t, Features: p, Labels: labels[t]})
		delete(labels, t)
	}
	for t := range labels {
		return o, usage.Errorf("build: --node-labels %s=...: labels are packed with features: give --node-features %s=PATH too", t, t)
	}
	o.AddReverse = h.addReverse
	return o, nil
}

// heteroBuildJSON is build --json's output for a heterogeneous graph.
type heteroBuildJSON struct {
	*ingest.HeteroSummary
	IO *procio.Counters `json:"io,omitempty"`
}

func runHeteroBuild(cmd *cobra.Command, h *heteroFlags, out string, bo ingest.BuildOptions, quiet, asJSON bool) error {
	o, err := h.options()
	if err != nil {
		return err
	}
	o.Build = bo
	sum, err := ingest.BuildHetero(cmd.Context(), out, o)
	if err != nil {
		return err
	}
	return reportHetero(cmd, sum, quiet, asJSON)
}

func reportHetero(cmd *cobra.Command, sum *ingest.HeteroSummary, quiet, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(heteroBuildJSON{HeteroSummary: sum, IO: selfIO()}); err != nil {
			return err
		}
	}
	if !quiet {
		for _, d := range sum.StaleRemoved {
			fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: removed %s, left by an earlier build that was killed\n", d)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), heteroSummaryLine(sum))
	}
	return nil
}

func heteroSummaryLine(s *ingest.HeteroSummary) string {
	var types []string
	for _, t := range s.NodeTypes {
		types = append(types, fmt.Sprintf("%s %d", t.Name, t.Count))
	}
	var rels []string
	for _, r := range s.Relations {
		rels = append(rels, fmt.Sprintf("%s %d", strings.ReplaceAll(r.Relation, heterofmt.Sep, ","), r.NumEdges))
	}
	line := fmt.Sprintf("chunkify: built %s (heterogeneous): nodes %s; edges stored %s (%d in all, %d read), %s, in %.2fs (%s edges/s)",
		s.Dir, strings.Join(types, ", "), strings.Join(rels, "; "), s.NumEdges, s.InputEdges, progress.Bytes(s.Bytes), s.Seconds,
		progress.Count(float64(s.InputEdges)/max(s.Seconds, 1e-9)))
	for _, f := range s.Features {
		line += fmt.Sprintf("; features %s: %d × %d %s", filepath.Base(f.Dir), f.NumNodes, f.Dim, f.DType)
	}
	return line
}

func newHeteroGenCmd() *cobra.Command {
	var (
		preset, out, chunkSize, memory, selfLoops string
		edgeLists                                 string
		edges                                     int64
		seed                                      uint64
		addReverse, dedup, force, quiet, asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "hetero --preset mag240m-like --edges E -o DIR",
		Short: "Build a typed R-MAT heterogeneous graph directory (MAG240M-like node types and relations), generated as it is built",
		Long: `hetero generates a typed R-MAT graph in MAG240M's proportions — node
types paper, author, institution; relations (author, writes, paper),
(author, affiliated_with, institution), (paper, cites, paper), with
MAG240M's shares of the edges and its average degrees — scaled to --edges
edges in all, and builds it into a heterogeneous graph directory as
chunkify build does (no edge list in between: each relation's edges are
generated on every core as the build's first pass reads them, and
spooled, as a compressed input is, for its second). The
graph is a pure function of --preset, --edges and --seed.

--edge-lists DIR writes the same graph as edge lists instead, one
DIR/SRC___REL___DST.bin32 per relation (uint32 pairs: src id, dst id) and
DIR/num-node-dict.csv, the input of chunkify build --relation ...
--node-types DIR/num-node-dict.csv (a build from files, for benchmarks).`,
		Example: `  chunkify generate hetero --preset mag240m-like --edges 10000000 --seed 1 -o out/mag-1e7
  chunkify generate hetero --edges 100000 -o out/small --add-reverse --chunk-size 1MiB -q
  chunkify generate hetero --edges 10000000 --edge-lists out/mag-1e7-lists`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (out == "") == (edgeLists == "") {
				return usage.Errorf("generate hetero: -o DIR is required (or --edge-lists DIR, not both)")
			}
			g, err := ingest.Preset(preset, edges)
			if err != nil {
				return usage.Errorf("generate hetero: %w", err)
			}
			g.Seed = seed
			if edgeLists != "" {
				rels, err := ingest.WriteTypedEdgeLists(cmd.Context(), edgeLists, g)
				if err != nil {
					return err
				}
				if !quiet {
					for i, r := range rels {
						fmt.Fprintf(cmd.ErrOrStderr(), "chunkify: wrote %s: (%s, %s, %s), %d edges\n", r.Inputs[0], r.Src, r.Rel, r.Dst, g.Relations[i].Edges)
					}
				}
				return nil
			}
			cs, err := parseChunkSize(chunkSize)
			if err != nil {
				return err
			}
			mem, err := parseMemory(memory)
			if err != nil {
				return err
			}
			if selfLoops != chunkfmt.SelfLoopsKeep && selfLoops != chunkfmt.SelfLoopsDrop {
				return usage.Errorf("generate hetero: --self-loops %q: want keep or drop", selfLoops)
			}
			bo := ingest.BuildOptions{ChunkSize: cs, Memory: mem, Dedup: dedup, SelfLoops: selfLoops, Force: force,
				Progress: stderrTTY(cmd, quiet), CreatedBy: "chunkify generate hetero"}
			sum, err := ingest.BuildHetero(cmd.Context(), out, ingest.HeteroOptions{Generate: &g, AddReverse: addReverse, Build: bo})
			if err != nil {
				return err
			}
			return reportHetero(cmd, sum, quiet, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&preset, "preset", ingest.PresetMAG240M, "node types and relations: mag240m-like")
	fl.Int64Var(&edges, "edges", 0, "edges in all, over the relations (before --add-reverse)")
	fl.Uint64Var(&seed, "seed", 1, "random seed; the graph is a pure function of the flags")
	fl.BoolVar(&addReverse, "add-reverse", false, "add (DST, rev_REL, SRC) relations; store cites both ways (PyG's ToUndirected)")
	fl.BoolVar(&dedup, "dedup", true, "remove duplicate neighbors")
	fl.StringVar(&selfLoops, "self-loops", "keep", "keep|drop self-loops (of relations within one type)")
	fl.StringVar(&chunkSize, "chunk-size", "512MiB", "chunk size, a multiple of 512 bytes")
	fl.StringVar(&memory, "memory", "auto", "memory budget of each relation's build, a size such as 8GiB; auto: the memory available")
	fl.BoolVar(&force, "force", false, "replace an existing output directory once the new graph is complete")
	fl.StringVarP(&out, "output", "o", "", "output heterogeneous graph directory (required, unless --edge-lists)")
	fl.StringVar(&edgeLists, "edge-lists", "", "write the relations as bin32 edge lists and num-node-dict.csv into this directory instead of building")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress and no summary line")
	fl.BoolVar(&asJSON, "json", false, "print a JSON summary on stdout")
	cmd.MarkFlagRequired("edges")
	return cmd
}

// verifyHetero is verify of a heterogeneous directory.
func verifyHetero(ctx context.Context, w io.Writer, dir string, quiet bool) error {
	if err := heterofmt.Verify(ctx, dir); err != nil {
		return fmt.Errorf("verify %s: %w", dir, err)
	}
	if quiet {
		return nil
	}
	m, err := heterofmt.Read(dir)
	if err != nil {
		return err
	}
	var feats []string
	for _, t := range m.NodeTypes {
		fm, err := featstore.ReadManifest(filepath.Join(dir, filepath.FromSlash(heterofmt.FeatureDir(t.Name))))
		if errors.Is(err, featstore.ErrNoFeatures) {
			continue
		}
		if err != nil {
			return err
		}
		f := fmt.Sprintf("%s %d × %d %s", t.Name, fm.NumNodes, fm.Features.Dim, fm.Features.DType)
		if fm.Labels != nil {
			f += fmt.Sprintf(" with labels (%d labeled, %d classes)", fm.Labels.Labeled, fm.Labels.NumClasses)
		}
		feats = append(feats, f)
	}
	fs := "no feature stores"
	if len(feats) > 0 {
		fs = "features ok: " + strings.Join(feats, "; ")
	}
	fmt.Fprintf(w, "%s: ok (heterogeneous: %d node types, %d relations, %d edges; %s)\n", dir, len(m.NodeTypes), len(m.Relations), m.NumEdges(), fs)
	return nil
}

// heteroInfo is what info reports of a heterogeneous directory.
type heteroInfo struct {
	Dir       string               `json:"dir"`
	NodeTypes []heterofmt.NodeType `json:"node_types"`
	NumEdges  uint64               `json:"num_edges"`
	Relations []relationInfo       `json:"relations"`
}

type relationInfo struct {
	Relation  string     `json:"relation"` // SRC___REL___DST
	ReverseOf string     `json:"reverse_of,omitempty"`
	Info      *graphInfo `json:"graph"` // degree: in-degrees of the dst type's nodes
}

func readHeteroInfo(dir string) (*heteroInfo, error) {
	g, err := heterofmt.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", dir, err)
	}
	g.Close()
	m := g.Manifest
	hi := &heteroInfo{Dir: dir, NodeTypes: m.NodeTypes, NumEdges: m.NumEdges()}
	for _, r := range m.Relations {
		// Degrees over the dst type's nodes, not the padding rows.
		nd := m.Count(r.Dst)
		ri, err := readInfoRows(filepath.Join(dir, filepath.FromSlash(r.Dir)), max(nd, 1))
		if err != nil {
			return nil, err
		}
		if nd == 0 {
			ri.Degree = degreeStats{} // no dst nodes: every row is padding
		}
		hi.Relations = append(hi.Relations, relationInfo{Relation: r.Key(), ReverseOf: r.ReverseOf, Info: ri})
	}
	return hi, nil
}

func printHeteroInfo(w io.Writer, hi *heteroInfo) {
	fmt.Fprintf(w, "graph      %s (heterogeneous)\n", hi.Dir)
	for _, t := range hi.NodeTypes {
		fmt.Fprintf(w, "node type  %s: %d nodes\n", t.Name, t.Count)
	}
	fmt.Fprintf(w, "edges      %d over %d relations\n", hi.NumEdges, len(hi.Relations))
	for _, r := range hi.Relations {
		in := r.Info
		rev := ""
		if r.ReverseOf != "" {
			rev = ", the reverse of " + r.ReverseOf
		}
		d := in.Degree
		fmt.Fprintf(w, "relation   %s%s: %d edges, %d rows, %d chunks (%s); in-degree of its dst nodes: median %d, mean %.2f, p99 %d, max %d, %d without\n",
			r.Relation, rev, in.NumEdges, in.NumNodes, in.NumChunks, progress.Bytes(in.FileSize), d.Median, d.Mean, d.P99, d.Max, d.Isolated)
	}
}

// isHetero tells a heterogeneous directory from a homogeneous one.
func isHetero(dir string) bool {
	if heterofmt.Is(dir) {
		return true
	}
	// A directory with relations/ but no hetero.json is a heterogeneous
	// build that never finished: say so rather than "no manifest.json".
	_, err := os.Stat(filepath.Join(dir, heterofmt.RelationsDir))
	_, merr := os.Stat(filepath.Join(dir, chunkfmt.ManifestFile))
	return err == nil && merr != nil
}
