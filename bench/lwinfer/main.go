// Command lwinfer runs one pass of layer-wise inference over a graph
// directory (package layerwise): every node with all of its in-neighbors,
// --batch-size consecutive nodes per minibatch, read by one sequential
// pass over edges.chunks, each minibatch's feature rows (x_all[n_id])
// copied out of the feature store by --workers goroutines, as a server's
// connections copy them into their replies. It prints the pass's figures
// as JSON (layerwise.DrainReport, wall in seconds added). bench/lwinfer.sh
// runs it against the disk's sequential floor.
//
//	go run ./bench/lwinfer --graph /tmp/ss-lwinfer/g-s22 --batch-size 4096
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/fullscan"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/layerwise"
)

func main() {
	graph := flag.String("graph", "", "graph directory (required)")
	store := flag.String("store", "", "directory of the feature store the rows come from (default: the graph's; \"none\": no rows)")
	batch := flag.Int("batch-size", 4096, "nodes per minibatch")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "goroutines copying the minibatches' rows")
	resident := flag.Int64("resident", -1, "read the feature file whole into memory when it has at most this many bytes (-1: half the memory available, 0: never)")
	cache := flag.Int64("cache", layerwise.DefaultCacheBytes, "a planned window's cache, in bytes (when the rows are not resident)")
	edgeIDs := flag.Bool("edge-ids", true, "compute each edge's id (PyG's e_id)")
	copyRows := flag.Bool("copy", true, "copy every minibatch's rows (x_all[n_id]) out; false: the pass's reads alone, the rows read into memory once")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the pass here")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lwinfer:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "lwinfer:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*graph, *store, *batch, *workers, *resident, *cache, *edgeIDs, *copyRows); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "lwinfer:", err)
		os.Exit(1)
	}
}

func run(graph, store string, batch, workers int, resident, cache int64, edgeIDs, copyRows bool) error {
	if graph == "" {
		return errors.New("--graph is required")
	}
	o := layerwise.Options{Scan: fullscan.Options{BatchSize: batch, EdgeIDs: edgeIDs}, CacheBytes: cache, ResidentBytes: resident}
	if resident < 0 {
		o.ResidentBytes = memavail.Available() / 2
	}
	if store != "none" {
		if store == "" {
			store = graph
		}
		st, err := featstore.Open(store)
		if err != nil {
			return err
		}
		defer st.Close()
		o.Features = st
	}
	p, err := layerwise.Open(graph, o)
	if err != nil {
		return err
	}
	defer p.Close()
	rep, err := layerwise.Drain(context.Background(), p, workers, copyRows, nil)
	if err != nil {
		return err
	}
	out := struct {
		layerwise.DrainReport
		WallS   float64 `json:"wall_s"`
		Workers int     `json:"workers"`
		Copy    bool    `json:"copy"`
	}{rep, rep.Wall.Seconds(), workers, copyRows}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}
