package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/serve"
)

// serveHeteroBatches runs serve with args over a heterogeneous graph and
// returns every minibatch of the first epochs epochs, printed, in order.
func serveHeteroBatches(t *testing.T, args []string, epochs int) []string {
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
			t.Errorf("serve %v: %v", args, err)
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
			t.Fatalf("serve %v stopped: %v (%s)", args, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer c.Close()
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for e := uint32(0); e < uint32(epochs); e++ {
		for {
			b, end, err := c.NextHeteroBatch(e, serve.DefaultSemantics, &info.Hetero)
			if err != nil {
				t.Fatalf("epoch %d: %v", e, err)
			}
			if end {
				break
			}
			js, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(js))
		}
	}
	return got
}

// A heterogeneous server gives the same minibatches, byte for byte, from
// one emulated device, three, and the GPU backend (a gpu.Backend per
// relation; here the GPU library's CPU stand-in, the real library where
// STREAMSAMPLER_GPU_TEST and STREAMSAMPLER_GPU_LIB name it), with both
// semantics, edge ids and feature rows.
func TestServeHeteroBackendsAgree(t *testing.T) {
	lib := os.Getenv("STREAMSAMPLER_GPU_LIB")
	if os.Getenv("STREAMSAMPLER_GPU_TEST") == "" || lib == "" {
		cc, err := exec.LookPath("cc")
		if err != nil {
			t.Skip("no C compiler to build the GPU library's CPU stand-in")
		}
		lib = filepath.Join(t.TempDir(), "libfake.so")
		if b, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-I../../gpu", "-o", lib, "../../gpu/testdata/fakelib.c").CombinedOutput(); err != nil {
			t.Fatalf("building the stand-in: %v\n%s", err, b)
		}
	}
	dir := buildHeteroMini(t)
	train := writeTrain(t, []uint32{0, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597})
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		args := []string{"--graph", dir, "--train", train, "--train-type", "company", "--fanouts", "3,2",
			"--relation-fanouts", "company___likes___company=1,1", "--batch-size", "4", "--seed", "11",
			"--semantics", sem.String(), "--edge-ids", "--features", "-q"}
		one := serveHeteroBatches(t, args, 2)
		three := serveHeteroBatches(t, append(slices.Clone(args), "--devices", "3"), 2)
		gpu := serveHeteroBatches(t, append(slices.Clone(args), "--backend", "gpu", "--gpu-lib", lib), 2)
		if len(one) != 8 {
			t.Fatalf("%s: %d minibatches in 2 epochs of 15 seeds by 4, want 8", sem, len(one))
		}
		if !slices.Equal(one, three) {
			t.Errorf("%s: 3 devices differ from 1", sem)
		}
		if !slices.Equal(one, gpu) {
			t.Errorf("%s: gpu (%s) differs from emu", sem, lib)
		}
		if strings.Contains(strings.Join(one, ""), "EIDs:[]") {
			t.Logf("%s: a relation without edges in some minibatch (fine)", sem)
		}
	}
}
