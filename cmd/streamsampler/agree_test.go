package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/serve"
)

// TestRunAndServeAgree runs `run` and `serve` with the same flags (every
// rank of three, prepare-at 0, 0.5 and 1) and checks that they hand out
// the same minibatches, byte for byte, in the same order: both go through
// one epoch.Pipeline, and this keeps it so.
func TestRunAndServeAgree(t *testing.T) {
	graph, _ := testGraph(t, 400, 4, 4096)
	train := make([]uint32, 0, 200)
	for v := uint32(1); v < 400; v += 2 {
		train = append(train, v)
	}
	trainFile := writeTrain(t, train)
	const epochs = 2
	for _, prepareAt := range []string{"0", "0.5", "1"} {
		for rank := range 3 {
			args := []string{"--graph", graph, "--train", trainFile, "--fanouts", "3,2", "--batch-size", "9",
				"--seed", "5", "--rank", fmt.Sprint(rank), "--world-size", "3", "--prepare-at", prepareAt}
			name := fmt.Sprintf("prepare-at=%s/rank=%d", prepareAt, rank)

			fromServe := serveBatches(t, append(args, "-q"), epochs)
			// run assembles on one goroutine or several: the order holds.
			for _, workers := range []string{"1", "4"} {
				var fromRun []string
				run := newRunCmdWith(func(b *epoch.Batch, _ []byte, _ []int32) { fromRun = append(fromRun, batchKey(b.Epoch, b.Index, b.Blocks)) })
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
						t.Fatalf("%s: minibatch %d differs:\nrun --workers %s %.200s\nserve %.200s", name, i, workers, fromRun[i], fromServe[i])
					}
				}
			}
		}
	}
}

// batchKey is a minibatch's identity and content as one string.
func batchKey(e uint32, i int, b *epoch.Blocks) string {
	return fmt.Sprintf("%d/%d %s", e, i, b.AppendJSON(nil))
}

// serveBatches starts `serve` with args on a Unix socket and takes every
// minibatch of the first epochs through the Go client.
func serveBatches(t *testing.T, args []string, epochs int) []string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newServeCmd()
	cmd.SetArgs(append(args, "--socket", sock))
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if !strings.HasPrefix(out.String(), "ready") {
			t.Errorf("serve printed %q, want a ready line", out.String())
		}
	}()
	var c *serve.Client
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if c, err = serve.Dial("unix", sock); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v (%s)", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer c.Close()
	var got []string
	for e := uint32(0); e < uint32(epochs); e++ {
		for {
			b, err := c.NextBatch(e)
			if err != nil {
				t.Fatalf("next_batch of epoch %d: %v", e, err)
			}
			if b.End {
				break
			}
			got = append(got, batchKey(b.Epoch, b.Index, b.Blocks))
		}
	}
	return got
}
