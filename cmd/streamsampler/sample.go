package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/ingest"
)

func init() { register(newSampleCmd) }

type sampleOptions struct {
	state, seeds, seedsFile, format, out string
}

func newSampleCmd() *cobra.Command {
	var o sampleOptions
	cmd := &cobra.Command{
		Use:   "sample --state STATEDIR (--seeds 1,2,3 | --seeds-file F) [--format json|npz|summary] [-o FILE]",
		Short: "Assemble one minibatch's blocks from the current epoch",
		Long: `sample prints the blocks of one minibatch of the current epoch: for each hop,
dst and src (global ids; src starts with dst) and the edges as local indices
(edge_src into src, edge_dst into dst). JSON is
{"epoch":N,"hops":[{"dst":[…],"src":[…],"edge_src":[…],"edge_dst":[…]},…]};
npz holds epoch, seeds and hopH_{dst,src,edge_src,edge_dst} for H = 1..L;
summary prints one line per hop with the block's sizes.
Every seed must be a training node of the current epoch (this rank's shard).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSample(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.state, "state", "", "state directory")
	f.StringVar(&o.seeds, "seeds", "", "comma-separated seed node ids")
	f.StringVar(&o.seedsFile, "seeds-file", "", "seed node ids, one per line (or .npy)")
	f.StringVar(&o.format, "format", "json", "output format: json, npz or summary")
	f.StringVarP(&o.out, "output", "o", "", "write to this file instead of stdout")
	cmd.MarkFlagRequired("state")
	return cmd
}

func runSample(cmd *cobra.Command, o sampleOptions) error {
	if (o.seeds == "") == (o.seedsFile == "") {
		return usagef("give exactly one of --seeds and --seeds-file")
	}
	if o.format != "json" && o.format != "npz" && o.format != "summary" {
		return usagef("--format %q: want json, npz or summary", o.format)
	}
	st := epoch.State{Dir: o.state}
	cfg, ok, err := readStateConfig(st)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is not a state directory (no %s): run prepare first", o.state, epoch.ConfigName)
	}
	cur, ok, err := st.Current()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s has no current epoch: run prepare, then advance", o.state)
	}
	var seeds []uint32
	if o.seeds != "" {
		seeds, err = parseNodeList(o.seeds)
	} else {
		seeds, err = ingest.ReadNodeIDs(o.seedsFile, cfg.Fingerprint.NumNodes)
	}
	if err != nil {
		return err
	}
	if len(seeds) == 0 {
		return usagef("no seeds given")
	}
	res, err := epoch.Read(st.EpochDir(cur))
	if err != nil {
		if errors.Is(err, epoch.ErrCorrupt) {
			return fmt.Errorf("current epoch %d is damaged (prepare it again into a new state directory): %w", cur, err)
		}
		return fmt.Errorf("current epoch %d: %w", cur, err)
	}
	b, err := res.Sample(seeds)
	if err != nil {
		if errors.Is(err, epoch.ErrNotInFrontier) {
			return fmt.Errorf("a seed is not a training node of epoch %d (see %s): %w", cur, cfg.Train, err)
		}
		return err
	}
	var w io.Writer = cmd.OutOrStdout()
	var f *os.File
	if o.out != "" {
		if f, err = os.Create(o.out); err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	switch o.format {
	case "json":
		err = writeBlocksJSON(bw, b)
	case "npz":
		err = writeBlocksNPZ(bw, b)
	default:
		err = writeBlocksSummary(bw, b)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && f != nil {
		err = f.Close()
	}
	return err
}

// writeBlocksJSON writes exactly {"epoch":N,"hops":[{"dst":…,"src":…,
// "edge_src":…,"edge_dst":…},…]} and a newline.
func writeBlocksJSON(w io.Writer, b *epoch.Blocks) error {
	buf := fmt.Appendf(nil, `{"epoch":%d,"hops":[`, b.Epoch)
	for h := range b.Hops {
		if h > 0 {
			buf = append(buf, ',')
		}
		buf = b.Hops[h].AppendJSON(buf)
	}
	buf = append(buf, "]}\n"...)
	_, err := w.Write(buf)
	return err
}

// writeBlocksSummary prints the sizes a reader checks first: per hop the
// destination and source counts and the number of edges between them.
func writeBlocksSummary(w io.Writer, b *epoch.Blocks) error {
	buf := fmt.Appendf(nil, "epoch %d, %d seeds\n", b.Epoch, len(b.Seeds))
	for h, hop := range b.Hops {
		buf = fmt.Appendf(buf, "hop %d: %d dst <- %d src (%d new), %d edges\n",
			h+1, len(hop.Dst), len(hop.Src), len(hop.Src)-len(hop.Dst), len(hop.EdgeSrc))
	}
	_, err := w.Write(buf)
	return err
}

func writeBlocksNPZ(w io.Writer, b *epoch.Blocks) error {
	arrays := []npzArray{
		{"epoch", func(w io.Writer) error {
			return writeNPY(w, "<u4", 1, func(w io.Writer) error { return npyData(w, []uint32{b.Epoch}) }, true)
		}},
		{"seeds", func(w io.Writer) error { return npyU32(w, b.Seeds) }},
	}
	for h := range b.Hops {
		hop := &b.Hops[h]
		p := fmt.Sprintf("hop%d_", h+1)
		arrays = append(arrays,
			npzArray{p + "dst", func(w io.Writer) error { return npyU32(w, hop.Dst) }},
			npzArray{p + "src", func(w io.Writer) error { return npyU32(w, hop.Src) }},
			npzArray{p + "edge_src", func(w io.Writer) error { return npyI32(w, hop.EdgeSrc) }},
			npzArray{p + "edge_dst", func(w io.Writer) error { return npyI32(w, hop.EdgeDst) }},
		)
	}
	return writeNPZ(w, arrays)
}

func npyData(w io.Writer, a []uint32) error {
	var sb strings.Builder
	for _, v := range a {
		sb.WriteByte(byte(v))
		sb.WriteByte(byte(v >> 8))
		sb.WriteByte(byte(v >> 16))
		sb.WriteByte(byte(v >> 24))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
