package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
	"golang.org/x/sys/unix"
)

// featureClient is a client of the feature-carrying requests, over a
// plain connection (Client) or one with shared rows (map_rows).
type featureClient interface {
	next(e uint32) (Minibatch, error)
	sample(seeds []uint32) (*epoch.Blocks, *Features, error)
	split(nodes []uint32, batchSize int) (SplitInfo, error)
	splitBatch(split, index uint32) (Minibatch, error)
}

type plainClient struct{ *Client }

func (c plainClient) next(e uint32) (Minibatch, error) { return c.NextBatch(e) }
func (c plainClient) sample(seeds []uint32) (*epoch.Blocks, *Features, error) {
	return c.SampleFeatures(pipeline.CurrentEpoch, seeds)
}
func (c plainClient) split(nodes []uint32, bs int) (SplitInfo, error) { return c.Split(nodes, bs) }
func (c plainClient) splitBatch(split, index uint32) (Minibatch, error) {
	return c.SplitBatch(split, index, DefaultSemantics)
}

// sharedClient speaks the protocol on a Unix socket after map_rows: the
// rows of replies come in memory files (SCM_RIGHTS), read and released
// (the lease word cleared) as soon as a reply is decoded.
type sharedClient struct {
	t     *testing.T
	uc    *net.UnixConn
	id    uint32
	files map[uint32]int
}

func dialShared(t *testing.T, path string) *sharedClient {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := &sharedClient{t: t, uc: nc.(*net.UnixConn), files: map[uint32]int{}}
	t.Cleanup(func() {
		nc.Close()
		for _, fd := range c.files {
			unix.Close(fd)
		}
	})
	if _, _, err := c.roundTrip(OpMapRows, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip sends a request and reads its reply, with the descriptor
// that came along (-1: none); an error reply is a *RemoteError.
func (c *sharedClient) roundTrip(op uint8, payload []byte) (Frame, int, error) {
	c.id++
	if _, err := c.uc.Write(AppendFrame(nil, op, StatusOK, c.id, payload)); err != nil {
		return Frame{}, -1, err
	}
	hdr := make([]byte, HeaderSize)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.uc.ReadMsgUnix(hdr, oob)
	if err != nil || n != HeaderSize {
		return Frame{}, -1, fmt.Errorf("header: %d bytes, %v", n, err)
	}
	fd := -1
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return Frame{}, -1, fmt.Errorf("control message: %v", err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			return Frame{}, -1, fmt.Errorf("rights: %v %v", fds, err)
		}
		fd = fds[0]
	}
	body := make([]byte, int(binary.LittleEndian.Uint32(hdr))-(HeaderSize-4))
	if _, err := io.ReadFull(c.uc, body); err != nil {
		return Frame{}, -1, err
	}
	f := Frame{Op: hdr[4], Status: hdr[5], Payload: body}
	if f.Status == StatusError {
		return f, fd, DecodeError(f.Payload)
	}
	return f, fd, nil
}

// batch decodes a reply with shared rows, copying them out and releasing
// their buffer.
func (c *sharedClient) batch(op uint8, payload []byte) (Minibatch, error) {
	f, fd, err := c.roundTrip(op, payload)
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return Minibatch{}, err
	}
	if f.Status == StatusEnd {
		return Minibatch{End: true}, nil
	}
	var held *SharedRows
	b, i, feat, err := decodeBatch(f.Payload, func(s SharedRows, n int) ([]byte, error) {
		if fd >= 0 {
			c.files[s.Buffer] = fd
		}
		if s.Retire != NoBuffer {
			unix.Close(c.files[s.Retire])
			delete(c.files, s.Retire)
		}
		held = &s
		x := make([]byte, n)
		_, err := unix.Pread(c.files[s.Buffer], x, int64(s.Offset))
		return x, err
	})
	if err != nil {
		return Minibatch{}, err
	}
	if held != nil {
		if _, err := unix.Pwrite(c.files[held.Buffer], make([]byte, 8), 0); err != nil {
			return Minibatch{}, err
		}
	}
	return Minibatch{Epoch: b.Epoch, Index: i, Blocks: b, Features: feat}, nil
}

func (c *sharedClient) next(e uint32) (Minibatch, error) {
	return c.batch(OpNextBatch, AppendEpochRequest(nil, e))
}
func (c *sharedClient) sample(seeds []uint32) (*epoch.Blocks, *Features, error) {
	b, err := c.batch(OpSample, AppendSampleRequest(nil, pipeline.CurrentEpoch, seeds, DefaultSemantics))
	return b.Blocks, b.Features, err
}
func (c *sharedClient) split(nodes []uint32, bs int) (SplitInfo, error) {
	var info SplitInfo
	f, _, err := c.roundTrip(OpSplit, AppendSplitRequest(nil, uint32(bs), nodes))
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(f.Payload, &info)
}
func (c *sharedClient) splitBatch(split, index uint32) (Minibatch, error) {
	return c.batch(OpSplitBatch, AppendSplitBatchRequest(nil, split, index, DefaultSemantics))
}

// TestServeCorruptStore: a byte flipped (the file's size unchanged) in
// the row, or the label, of training node v, after the server opened the
// store. Over a live server, through plain and shared-rows connections:
// the next_batch, sample and split_batch replies that need the row (or
// the label's page) are errors naming the file, the rows and their bytes
// — the minibatch of seed v among them — and every reply delivered
// carries the rows and labels the store was packed with. No wrong row or
// label reaches the client.
func TestServeCorruptStore(t *testing.T) {
	if !sharedRowsSupported {
		t.Skip("no memory files here")
	}
	g := randomCSR(3000, 8, 5)
	const v = 1500 // a training node: trainNodes(3000, 3)
	for _, tc := range []struct {
		labels, shared bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		name := fmt.Sprintf("labels%v/shared%v", tc.labels, tc.shared)
		fs := featureGraph(t, g, 16, featstore.Float32)
		dir := filepath.Dir(fs.FeaturesPath())
		rows, err := os.ReadFile(fs.FeaturesPath())
		if err != nil {
			t.Fatal(err)
		}
		lb, err := os.ReadFile(filepath.Join(dir, fs.Manifest().Labels.File))
		if err != nil {
			t.Fatal(err)
		}
		df, at := &fs.Manifest().Features.DataFile, int64(v)*fs.RowBytes()+5
		if tc.labels {
			df, at = &fs.Manifest().Labels.DataFile, 4*v+2
		}
		file := df.File
		b, _ := os.ReadFile(filepath.Join(dir, file))
		b[at] ^= 0x40
		os.WriteFile(filepath.Join(dir, file), b, 0o644)
		// The row (a row of the features, a page of the labels) and its
		// bytes, named.
		off, size := df.SpanRange(at / df.CRCSpan)
		defect := fmt.Sprintf("%s: row %d (bytes %d..%d): CRC-32C", file, v, off, off+size-1)
		if tc.labels {
			defect = fmt.Sprintf("%s: rows %d..%d (bytes %d..%d): CRC-32C", file, off/4, (off+size-1)/4, off, off+size-1)
		}

		cfg := Config{
			Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 3), Fanouts: []int{4, 3}, Seed: 2},
				BatchSize: 37, Epochs: 2, Features: &pipeline.FeaturePlanning{CacheRows: 300}},
			Sampler: &refSampler{g: g}, NumNodes: 3000, Features: fs,
		}
		path := serveUnix(t, newTestServer(t, cfg))
		var cl featureClient = plainClient{dial(t, path)}
		if tc.shared {
			cl = dialShared(t, path)
		}
		// delivered checks a reply that came: the rows and labels packed.
		delivered := func(what string, bl *epoch.Blocks, f *Features) {
			t.Helper()
			if f == nil {
				t.Fatalf("%s: %s: a reply without features", name, what)
			}
			nodes := bl.Nodes()
			var want []byte
			for _, u := range nodes {
				want = append(want, rows[int64(u)*fs.RowBytes():int64(u+1)*fs.RowBytes()]...)
			}
			if !bytes.Equal(f.X, want) {
				t.Fatalf("%s: %s: rows differ from those packed", name, what)
			}
			for i, s := range bl.Seeds {
				if f.Y[i] != int32(binary.LittleEndian.Uint32(lb[4*s:])) {
					t.Fatalf("%s: %s: label of seed %d differs from the one packed", name, what, s)
				}
			}
			if slices.Contains(bl.Seeds, v) {
				t.Fatalf("%s: %s: seed %d, whose page is flipped, delivered", name, what, v)
			}
		}
		// refused checks an error reply: the defect, named.
		refused := func(what string, err error) {
			t.Helper()
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != CodeInternal || !strings.Contains(err.Error(), defect) {
				t.Fatalf("%s: %s: %v, want an internal error naming %q", name, what, err, defect)
			}
		}
		errs := 0
		for {
			m, err := cl.next(0)
			if err != nil {
				refused("next_batch", err)
				errs++
				continue
			}
			if m.End {
				break
			}
			delivered(fmt.Sprintf("minibatch %d", m.Index), m.Blocks, m.Features)
		}
		if errs == 0 {
			t.Fatalf("%s: every minibatch of the epoch delivered", name)
		}
		_, _, err = cl.sample([]uint32{6, v})
		refused("sample", err)
		if bl, f, err := cl.sample([]uint32{6}); err == nil {
			delivered("sample", bl, f)
		} else {
			refused("sample", err)
		}
		sp, err := cl.split([]uint32{9, v, 4, 5}, 2)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.splitBatch(sp.Split, 0)
		refused("split_batch", err)
		if m, err := cl.splitBatch(sp.Split, 1); err == nil {
			delivered("split minibatch 1", m.Blocks, m.Features)
		} else {
			refused("split_batch", err)
		}
	}
}

// TestServeStoreReplaced: the feature store replaced under a running
// server (chunkify features --force: a new generation written, the old
// files removed) — the server keeps serving the generation it opened,
// for the epochs begun after the replacement too, through plain and
// shared-rows connections: no minibatch fails (error 6, consumed, until a
// restart, before), and every one carries the rows and labels of the
// generation the server opened.
func TestServeStoreReplaced(t *testing.T) {
	if !sharedRowsSupported {
		t.Skip("no memory files here")
	}
	g := randomCSR(2000, 6, 11)
	for _, shared := range []bool{false, true} {
		fs := featureGraph(t, g, 8, featstore.Float16)
		dir := filepath.Dir(fs.FeaturesPath())
		old, err := os.ReadFile(fs.FeaturesPath())
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{
			Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2000, 4), Fanouts: []int{3, 2}, Seed: 3},
				BatchSize: 31, Epochs: 4, PrepareAt: 0.5, Features: &pipeline.FeaturePlanning{CacheRows: 100, RowBytes: fs.RowBytes()}},
			Sampler: &refSampler{g: g}, NumNodes: 2000, Features: fs,
		}
		path := serveUnix(t, newTestServer(t, cfg))
		var cl featureClient = plainClient{dial(t, path)}
		if shared {
			cl = dialShared(t, path)
		}
		check := func(what string, bl *epoch.Blocks, f *Features) {
			t.Helper()
			var want []byte
			for _, u := range bl.Nodes() {
				want = append(want, old[int64(u)*fs.RowBytes():int64(u+1)*fs.RowBytes()]...)
			}
			if f == nil || !bytes.Equal(f.X, want) {
				t.Fatalf("shared %v: %s: rows are not the opened generation's", shared, what)
			}
			wy := make([]int32, len(bl.Seeds))
			if err := fs.ReadLabels(bl.Seeds, wy); err != nil || !slices.Equal(f.Y, wy) {
				t.Fatalf("shared %v: %s: labels are not the opened generation's (%v)", shared, what, err)
			}
		}
		for e := uint32(0); e < 4; e++ {
			for {
				m, err := cl.next(e)
				if err != nil {
					t.Fatalf("shared %v: epoch %d: %v", shared, e, err)
				}
				if m.End {
					break
				}
				check(fmt.Sprintf("epoch %d, minibatch %d", e, m.Index), m.Blocks, m.Features)
			}
			if e == 0 {
				w, err := featstore.Create(dir, featstore.Options{DType: featstore.Float32, Dim: 3, Labels: true, Force: true})
				if err != nil {
					t.Fatal(err)
				}
				w.Append(make([]byte, 2000*12))
				w.AppendLabels(make([]int32, 2000))
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(fs.FeaturesPath()); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the old generation's file is still there: %v", err)
				}
			}
			bl, f, err := cl.sample([]uint32{8, 1996})
			if err != nil {
				t.Fatalf("shared %v: sample in epoch %d: %v", shared, e, err)
			}
			check("sample", bl, f)
			sp, err := cl.split([]uint32{5, 7, 1999}, 2)
			if err != nil {
				t.Fatal(err)
			}
			m, err := cl.splitBatch(sp.Split, 1)
			if err != nil {
				t.Fatalf("shared %v: split_batch in epoch %d: %v", shared, e, err)
			}
			check("split minibatch", m.Blocks, m.Features)
		}
	}
}
