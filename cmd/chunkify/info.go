package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/progress"
)

// graphInfo is what `chunkify info` reports.
type graphInfo struct {
	Dir       string           `json:"dir"`
	NumNodes  uint32           `json:"num_nodes"`
	NumEdges  uint64           `json:"num_edges"`
	NumChunks int              `json:"num_chunks"`
	ChunkSize int64            `json:"chunk_size"`
	FileSize  int64            `json:"file_size"`
	FillPct   float64          `json:"fill_percent"` // bytes used / bytes stored, over all chunks
	Options   chunkfmt.Options `json:"options"`
	CreatedBy string           `json:"created_by,omitempty"`
	Degree    degreeStats      `json:"degree"`
}

type degreeStats struct {
	Min      uint32  `json:"min"`
	Max      uint32  `json:"max"`
	Mean     float64 `json:"mean"`
	Median   uint32  `json:"median"`
	P99      uint32  `json:"p99"`
	Isolated uint32  `json:"isolated"` // nodes of degree 0
}

func newInfoCmd() *cobra.Command {
	var asJSON bool
	var graph graphDirArg
	cmd := &cobra.Command{
		Use:   "info DIR | --graph DIR",
		Short: "Describe a graph directory: nodes, edges, chunks, degrees, options (per relation of a heterogeneous one)",
		Example: `  chunkify info out/email
  chunkify info --graph out/email --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := graph.dir(cmd, args)
			if err != nil {
				return err
			}
			if isHetero(dir) {
				hi, err := readHeteroInfo(dir)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(hi)
				}
				printHeteroInfo(cmd.OutOrStdout(), hi)
				return nil
			}
			info, err := readInfo(dir)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			printInfo(cmd.OutOrStdout(), info)
			return nil
		},
	}
	graph.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func readInfo(dir string) (*graphInfo, error) { return readInfoRows(dir, 0) }

// readInfoRows is readInfo with the degree statistics over the first rows
// nodes only (0: all of them): a relation of a heterogeneous graph, whose
// rows past its dst type's count are padding.
func readInfoRows(dir string, rows uint32) (*graphInfo, error) {
	g, err := chunkfmt.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", dir, err)
	}
	defer g.Close()
	m := g.Manifest
	info := &graphInfo{Dir: dir, NumNodes: m.NumNodes, NumEdges: m.NumEdges, NumChunks: len(m.Chunks),
		ChunkSize: m.ChunkSize, FileSize: m.FileSize(), Options: m.Options, CreatedBy: m.CreatedBy}
	var used, stored int64
	for _, c := range m.Chunks {
		used += c.BytesUsed
		stored += c.BytesUsed + c.FillBytes
	}
	if stored > 0 {
		info.FillPct = 100 * float64(used) / float64(stored)
	}
	if m.NumNodes == 0 {
		return info, nil
	}
	n := m.NumNodes
	if rows > 0 && rows < n {
		n = rows
	}
	deg := make([]uint32, n)
	for u := range deg {
		d, err := g.Degree(uint32(u))
		if err != nil {
			return nil, fmt.Errorf("info %s: %w", dir, err)
		}
		deg[u] = uint32(d)
		if d == 0 {
			info.Degree.Isolated++
		}
	}
	slices.Sort(deg)
	k := len(deg)
	info.Degree.Min, info.Degree.Max = deg[0], deg[k-1]
	info.Degree.Mean = float64(m.NumEdges) / float64(k)
	info.Degree.Median = deg[(k-1)/2]
	info.Degree.P99 = deg[min(k-1, k*99/100)]
	return info, nil
}

func printInfo(w io.Writer, in *graphInfo) {
	o := in.Options
	fmt.Fprintf(w, "graph      %s\n", in.Dir)
	fmt.Fprintf(w, "nodes      %d\n", in.NumNodes)
	fmt.Fprintf(w, "edges      %d\n", in.NumEdges)
	fmt.Fprintf(w, "chunks     %d of %s (%d bytes); edges.chunks %s, %.1f%% filled\n", in.NumChunks, progress.Bytes(in.ChunkSize), in.ChunkSize, progress.Bytes(in.FileSize), in.FillPct)
	d := in.Degree
	fmt.Fprintf(w, "degree     min %d, median %d, mean %.2f, p99 %d, max %d; %d isolated nodes\n", d.Min, d.Median, d.Mean, d.P99, d.Max, d.Isolated)
	fmt.Fprintf(w, "options    symmetrize=%v reverse=%v dedup=%v self-loops=%s\n", o.Symmetrize, o.Reverse, o.Dedup, o.SelfLoops)
	if in.CreatedBy != "" {
		fmt.Fprintf(w, "created by %s\n", in.CreatedBy)
	}
}
