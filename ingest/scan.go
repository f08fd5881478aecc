package ingest

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/streamsampler/streamsampler/internal/progress"
)

// ScanSummary is what Scan found in its inputs.
type ScanSummary struct {
	Inputs     []string `json:"inputs"`
	InputBytes int64    `json:"input_bytes"` // sizes of the named files (0 for standard input)
	Edges      uint64   `json:"edges"`
	MaxID      int64    `json:"max_id"` // the largest node id, -1 without edges
	SelfLoops  uint64   `json:"self_loops"`
	Seconds    float64  `json:"seconds"`
}

// Scan reads every edge of the inputs, in any format Build takes, and
// checks every record as Build's first pass would (syntax, id range), but
// stores nothing: it answers "does this edge list parse, and what is in
// it" before a long build, in the time the parser alone needs. Errors are
// Build's, naming the file and line or record.
func Scan(ctx context.Context, inputs []string, format Format, numNodes uint32, bar *progress.Bar) (*ScanSummary, error) {
	t0 := time.Now()
	sum := &ScanSummary{Inputs: inputs, MaxID: -1}
	for _, in := range inputs {
		if in != "-" {
			st, err := os.Stat(in)
			if err != nil {
				return nil, fmt.Errorf("scan: %w", err)
			}
			sum.InputBytes += st.Size()
		}
	}
	for _, in := range inputs {
		name := in
		if in == "-" {
			name = "stdin"
		}
		r, err := OpenEdges(in, ReadOptions{Format: format, NumNodes: numNodes, Progress: bar, Name: name})
		if err != nil {
			return nil, err
		}
		err = scanOne(ctx, r, sum)
		r.Close()
		if err != nil {
			return nil, err
		}
	}
	sum.Seconds = time.Since(t0).Seconds()
	return sum, nil
}

func scanOne(ctx context.Context, r *EdgeReader, sum *ScanSummary) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		m, loops := edgeStats(p)
		if len(p) > 0 && int64(m) > sum.MaxID {
			sum.MaxID = int64(m)
		}
		sum.SelfLoops += loops
		sum.Edges += uint64(len(p) / 2)
	}
}

// edgeStats returns the largest id in p and the number of its edges that
// are self-loops. It runs on the consumer's goroutine while the parser's
// run on every core, so it is kept cheap: no data-dependent branch, and
// two edges per iteration into independent maxima.
func edgeStats(p []uint32) (m uint32, loops uint64) {
	var m0, m1 uint32
	var l0, l1 uint64
	k := 0
	for ; k+3 < len(p); k += 4 {
		a, b, c, d := p[k], p[k+1], p[k+2], p[k+3]
		m0 = max(m0, a, b)
		m1 = max(m1, c, d)
		l0 += oneIfEqual(a, b)
		l1 += oneIfEqual(c, d)
	}
	if k+1 < len(p) {
		m0 = max(m0, p[k], p[k+1])
		l0 += oneIfEqual(p[k], p[k+1])
	}
	return max(m0, m1), l0 + l1
}

// oneIfEqual is 1 if a == b, else 0, without a branch.
func oneIfEqual(a, b uint32) uint64 {
	x := uint64(a ^ b)   // 0 iff equal
	return (x - 1) >> 63 // x-1 wraps to 2^64-1 only from 0
}
