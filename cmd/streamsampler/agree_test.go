package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/serve"
)

// TestRunAndServeAgree runs `run` and `serve` with the same flags (every
// rank of three, prepare-at 0, 0.5 and 1) and checks that they hand out
// the same minibatches, byte for byte, in the same order: both go through
// one pipeline.Pipeline, and this keeps it so. With --features (without a
// cache, and with a cache and --reorder match) it checks that they also
// deliver the same feature rows and labels, minibatch for minibatch: both
// read through featrows under the epoch's plan, run in one goroutine,
// serve for three clients at once, each minibatch in its turn.
func TestRunAndServeAgree(t *testing.T) {
	graph, _ := testGraph(t, 400, 4, 4096)
	writeFeatures(t, graph, 400, 6)
	train := make([]uint32, 0, 200)
	for v := uint32(1); v < 400; v += 2 {
		train = append(train, v)
	}
	trainFile := writeTrain(t, train)
	const epochs = 2
	for _, features := range []struct {
		name    string
		flags   []string
		clients int
	}{
		{"none", nil, 1},
		{"features", []string{"--features"}, 3},
		{"features-cached-reordered", []string{"--features", "--feature-cache", "1KiB", "--reorder", "match"}, 3},
	} {
		for _, prepareAt := range []string{"0", "0.5", "1"} {
			for rank := range 3 {
				args := append([]string{"--graph", graph, "--train", trainFile, "--fanouts", "3,2", "--batch-size", "9",
					"--seed", "5", "--rank", fmt.Sprint(rank), "--world-size", "3", "--prepare-at", prepareAt}, features.flags...)
				name := fmt.Sprintf("%s/prepare-at=%s/rank=%d", features.name, prepareAt, rank)

				fromServe := serveBatches(t, append(args, "-q"), epochs, features.clients)
				// run assembles on one goroutine or several: the order holds.
				for _, workers := range []string{"1", "4"} {
					var fromRun []string
					run := newRunCmdWith(func(b *pipeline.Minibatch, x []byte, y []int32) {
						if features.flags != nil && x == nil {
							t.Errorf("%s: run --features delivered minibatch %d of epoch %d without rows", name, b.Index, b.Epoch)
						}
						fromRun = append(fromRun, batchKey(b.Epoch, b.Index, b.Blocks, x, y))
					})
					run.SetArgs(append([]string{"--epochs", fmt.Sprint(epochs), "--workers", workers}, args...))
					run.SetOut(io.Discard)
					run.SetErr(io.Discard)
					if err := run.Execute(); err != nil {
						t.Fatalf("%s: run: %v", name, err)
					}
					if len(fromRun) == 0 || len(fromRun)%epochs != 0 {
						t.Fatalf("%s: run handed out %d minibatches", name, len(fromRun))
					}
					if len(fromServe) != len(fromRun) {
						t.Fatalf("%s: serve handed out %d minibatches, run --workers %s %d", name, len(fromServe), workers, len(fromRun))
					}
					for i := range fromRun {
						if fromRun[i] != fromServe[i] {
							t.Fatalf("%s: minibatch %d differs:\nrun --workers %s %.300s\nserve %.300s", name, i, workers, fromRun[i], fromServe[i])
						}
					}
				}
			}
		}
	}
}

// batchKey is a minibatch's identity and content as one string: where
// it carries features, the size and CRC-32C of its rows and its labels
// (first, so that a message's prefix shows them), then its blocks.
func batchKey(e uint32, i int, b *epoch.Blocks, x []byte, y []int32) string {
	key := fmt.Sprintf("%d/%d ", e, i)
	if x != nil {
		key += fmt.Sprintf("x: %d bytes, crc32c %08x; y: %v; ", len(x), crc32c.Checksum(x), y)
	}
	return key + string(b.AppendJSON(nil))
}

// serveBatches starts `serve` with args on a Unix socket and takes every
// minibatch of the first epochs through clients concurrent Go clients;
// it returns them in the epochs' order (by epoch, then index).
func serveBatches(t *testing.T, args []string, epochs, clients int) []string {
	t.Helper()
	dial, stop := startServe(t, args)
	defer stop()
	type served struct {
		epoch uint32
		index int
		key   string
	}
	var mu sync.Mutex
	var got []served
	var wg sync.WaitGroup
	for range clients {
		c := dial()
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := uint32(0); e < uint32(epochs); e++ {
				for {
					b, err := c.NextBatch(e)
					if err != nil {
						t.Errorf("next_batch of epoch %d: %v", e, err)
						return
					}
					if b.End {
						break
					}
					var x []byte
					var y []int32
					if b.Features != nil {
						x, y = b.Features.X, b.Features.Y
					}
					mu.Lock()
					got = append(got, served{b.Epoch, b.Index, batchKey(b.Epoch, b.Index, b.Blocks, x, y) + linkKey(b.Link)})
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(got, func(a, b served) int { return cmp.Or(cmp.Compare(a.epoch, b.epoch), cmp.Compare(a.index, b.index)) })
	keys := make([]string, len(got))
	for i, g := range got {
		keys[i] = g.key
	}
	return keys
}

// startServe runs serve with args on a socket of its own and returns a
// dialer of it, which waits for it to listen, and stop, which stops it
// and checks that it stopped cleanly after printing its ready line.
func startServe(t *testing.T, args []string) (dial func() *serve.Client, stop func()) {
	t.Helper()
	return startServeStderr(t, args, io.Discard)
}

// startServeStderr is startServe with serve's stderr written to stderr
// (read it after stop).
func startServeStderr(t *testing.T, args []string, stderr io.Writer) (dial func() *serve.Client, stop func()) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newServeCmd()
	cmd.SetArgs(append(slices.Clone(args), "--socket", sock))
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %v: %v", args, err)
		}
		if !strings.HasPrefix(out.String(), "ready") {
			t.Errorf("serve printed %q, want a ready line", out.String())
		}
	}
	dial = func() *serve.Client {
		for deadline := time.Now().Add(30 * time.Second); ; {
			c, err := serve.Dial("unix", sock)
			if err == nil {
				return c
			}
			select {
			case err := <-done:
				done <- err // for stop
				t.Fatalf("serve %v stopped: %v (%s)", args, err, out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not listen: %v", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return dial, stop
}
