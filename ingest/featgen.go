package ingest

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/npy"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/rng"
)

// FeatureGenOptions describe a synthetic node-feature matrix.
type FeatureGenOptions struct {
	NumNodes uint32
	Dim      int
	DType    featstore.DType
	Seed     uint64
	// Classes, when positive, gives every node a label in [0, Classes)
	// (SyntheticLabel) and adds 1 to the feature of column label mod Dim,
	// so that a model can learn the labels from the features; 0 leaves the
	// features pure noise.
	Classes  int
	Progress *progress.Bar // counts bytes written
}

// SyntheticLabel is node v's label under FeatureGenOptions with this
// seed and classes > 0.
func SyntheticLabel(seed uint64, v uint32, classes int) int32 {
	return int32(rng.Below(rng.Mix64(seed^0xA5A5A5A5A5A5A5A5^uint64(v)*0x9E3779B97F4A7C15), uint32(classes)))
}

// SyntheticRow writes node v's features, as float32 before any
// narrowing to the matrix's dtype, into row (len(row) = Dim): uniform in
// [-1, 1) from 24 bits of a hash of (seed, v, column), plus 1 in column
// SyntheticLabel mod Dim when classes > 0.
func SyntheticRow(seed uint64, v uint32, classes int, row []float32) {
	base := seed ^ uint64(v)*0xD1B54A32D192ED03
	for c := range row {
		x := rng.Mix64(base + uint64(c)*0x9E3779B97F4A7C15)
		row[c] = float32(int64(x>>40)-1<<23) / (1 << 23)
	}
	if classes > 0 && len(row) > 0 {
		row[int(SyntheticLabel(seed, v, classes))%len(row)]++
	}
}

// encodeRow narrows a float32 row to dtype into dst (len: dim × size):
// float16 by rounding, int8 as round(127·x) clamped, uint8 as
// round(127.5·(x+1)) clamped.
func encodeRow(dst []byte, row []float32, dtype featstore.DType) {
	switch dtype {
	case featstore.Float32:
		for c, x := range row {
			binary.LittleEndian.PutUint32(dst[4*c:], math.Float32bits(x))
		}
	case featstore.Float16:
		for c, x := range row {
			binary.LittleEndian.PutUint16(dst[2*c:], featstore.Float16FromFloat32(x))
		}
	case featstore.Int8:
		for c, x := range row {
			dst[c] = byte(int8(max(-128, min(127, math.Round(float64(x)*127)))))
		}
	case featstore.Uint8:
		for c, x := range row {
			dst[c] = byte(max(0, min(255, math.Round((float64(x)+1)*127.5))))
		}
	}
}

// WriteSyntheticFeatures writes a seeded synthetic feature matrix
// [NumNodes, Dim] of DType as a .npy file at path (atomically: a
// temporary file renamed into place), and, with labelsPath and Classes >
// 0, its labels as an int32 .npy. Rows are generated on every core in
// blocks and written in order, streamed: memory is a few blocks whatever
// the matrix's size. The same options give the same bytes.
func WriteSyntheticFeatures(ctx context.Context, path, labelsPath string, o FeatureGenOptions) error {
	size := o.DType.Size()
	switch {
	case size == 0:
		return fmt.Errorf("generate features: dtype %q: want float32, float16, int8 or uint8", o.DType)
	case o.Dim < 1 || o.Dim > featstore.MaxDim:
		return fmt.Errorf("generate features: dim %d: want 1..%d", o.Dim, featstore.MaxDim)
	case o.Classes < 0:
		return fmt.Errorf("generate features: %d classes, want >= 0", o.Classes)
	case labelsPath != "" && o.Classes == 0:
		return fmt.Errorf("generate features: labels need classes > 0")
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("generate features: %w", err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 4<<20)
	if _, err := (npy.Header{Descr: o.DType.NumPyDescr(), Shape: []int{int(o.NumNodes), o.Dim}}).WriteTo(bw); err != nil {
		return fmt.Errorf("generate features: %w", err)
	}
	rowBytes := o.Dim * size
	const blockRows = 4096
	blocks := (int(o.NumNodes) + blockRows - 1) / blockRows
	err = orderedBlocks(ctx, blocks, func(k int, buf []byte) []byte {
		lo := uint32(k) * blockRows
		hi := min(o.NumNodes, lo+blockRows)
		buf = buf[:0]
		row := make([]float32, o.Dim)
		for v := lo; v < hi; v++ {
			SyntheticRow(o.Seed, v, o.Classes, row)
			n := len(buf)
			buf = append(buf, make([]byte, rowBytes)...)
			encodeRow(buf[n:], row, o.DType)
		}
		return buf
	}, func(b []byte) error {
		if _, err := bw.Write(b); err != nil {
			return err
		}
		o.Progress.Add(int64(len(b)))
		return nil
	})
	if err != nil {
		return fmt.Errorf("generate features: writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("generate features: writing %s: %w", path, err)
	}
	if labelsPath != "" {
		labels := make([]int32, o.NumNodes)
		for v := range labels {
			labels[v] = SyntheticLabel(o.Seed, uint32(v), o.Classes)
		}
		lf, err := atomicfile.Create(labelsPath, 0o644)
		if err != nil {
			return fmt.Errorf("generate features: %w", err)
		}
		defer lf.Abort()
		lw := bufio.NewWriter(lf)
		if err := npy.WriteArray(lw, labels); err != nil {
			return fmt.Errorf("generate features: writing %s: %w", labelsPath, err)
		}
		if err := lw.Flush(); err != nil {
			return fmt.Errorf("generate features: writing %s: %w", labelsPath, err)
		}
		if err := lf.Commit(); err != nil {
			return fmt.Errorf("generate features: %w", err)
		}
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("generate features: %w", err)
	}
	return nil
}

// orderedBlocks computes blocks 0..n-1 with gen on every core and hands
// them to put in order. Buffers are handed out with the jobs, in order, so
// block k never waits for a buffer that a later block holds; at most
// 2·cores blocks are held at once.
func orderedBlocks(ctx context.Context, n int, gen func(k int, buf []byte) []byte, put func([]byte) error) error {
	workers := max(1, runtime.GOMAXPROCS(0))
	type job struct {
		k   int
		buf []byte
	}
	results := make([]chan []byte, n)
	for k := range results {
		results[k] = make(chan []byte, 1)
	}
	free := make(chan []byte, 2*workers)
	for range 2 * workers {
		free <- nil
	}
	jobs := make(chan job)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(jobs)
		for k := range n {
			var buf []byte
			select {
			case buf = <-free:
			case <-quit:
				return
			}
			select {
			case jobs <- job{k, buf}:
			case <-quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			for j := range jobs {
				results[j.k] <- gen(j.k, j.buf)
			}
		}()
	}
	for k := range n {
		var b []byte
		select {
		case b = <-results[k]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := put(b); err != nil {
			return err
		}
		free <- b
	}
	return nil
}
