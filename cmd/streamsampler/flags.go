package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
)

// Flags that mean the same thing in every command are defined here, once,
// so that their form, default and help cannot drift apart.

// fanoutsHelp is the help of every --fanouts flag. The limits are those of
// the sampling kernels (hls.MaxFanout, which the GPU engine shares) and of
// the RNG key (epoch.MaxLayers).
var fanoutsHelp = fmt.Sprintf("neighbors per hop, hop 1 (the seeds' neighbors) first, comma-separated, e.g. 15,10,5; each 1..%d, or %d for every neighbor (e.g. -1 or -1,10), at most %d hops", hls.MaxFanout, epoch.AllNeighbors, epoch.MaxLayers)

// addFanoutsFlag registers --fanouts (no default: every command that
// samples needs it given, or recorded in its state directory).
func addFanoutsFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "fanouts", "", fanoutsHelp)
}

// seedHelp is the help of every --seed flag; its default is 0 everywhere.
const seedHelp = "random seed (samples, minibatch order and shards); epochs are a pure function of it"

// addSeedFlag registers --seed with its default, 0.
func addSeedFlag(fs *pflag.FlagSet, p *uint64) {
	fs.Uint64Var(p, "seed", 0, seedHelp)
}

// addQuietFlag registers -q/--quiet: nothing on stderr but errors.
func addQuietFlag(fs *pflag.FlagSet, p *bool, what string) {
	fs.BoolVarP(p, "quiet", "q", false, "no "+what+" on stderr")
}

// parseFanouts parses "15,10,5": one fanout per hop, hop 1 first. Each
// must be 1..hls.MaxFanout or -1 (epoch.AllNeighbors: every neighbor),
// and there are at most epoch.MaxLayers. An
// error names the item as layer l (0-based, as Result.Layers and the
// statistics count) and hop l+1 (as --fanouts and the blocks count).
func parseFanouts(s string) ([]int, error) { return parseFanoutList(s, "--fanouts", false) }

// parseFanoutList parses a fanout list given by flag; zero admits 0, a
// relation not sampled at that hop (PyG's 0 in a heterogeneous
// num_neighbors list).
func parseFanoutList(s, flag string, zero bool) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("%s: empty (want e.g. 15,10,5)", flag)
	}
	items := strings.Split(s, ",")
	if len(items) > epoch.MaxLayers {
		return nil, usagef("%s %q: %d hops, at most %d", flag, s, len(items), epoch.MaxLayers)
	}
	want := "a positive integer"
	if zero {
		want = "0 (not sampled), a positive integer"
	}
	var out []int
	for l, p := range items {
		k, err := strconv.Atoi(strings.TrimSpace(p))
		switch {
		case err == nil && k == epoch.AllNeighbors:
		case err == nil && k == 0 && zero:
		case err != nil || k < 1:
			return nil, usagef("%s %q: item %d (%q; layer %d, hop %d) is not %s or %d (every neighbor)", flag, s, l+1, p, l, l+1, want, epoch.AllNeighbors)
		case k > hls.MaxFanout:
			return nil, usagef("%s %q: item %d (%d; layer %d, hop %d) is above the maximum fanout %d", flag, s, l+1, k, l, l+1, hls.MaxFanout)
		}
		out = append(out, k)
	}
	return out, nil
}

// parseNodeList parses --seeds "1,2,3" into node ids, each below
// numNodes. An empty item ("3,,5", a trailing comma) is an error: it is
// a typo more often than not, and skipping it would hide one.
func parseNodeList(s string, numNodes uint32) ([]uint32, error) {
	var out []uint32
	for i, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, usagef("--seeds %q: item %d is empty (want node ids separated by single commas, e.g. 1,2,3)", s, i+1)
		}
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, usagef("--seeds: item %d (%q) is not a node id", i+1, p)
		}
		if v >= uint64(numNodes) {
			// Not a usage error: like a seed outside the training set, it
			// is wrong for this graph, not in itself (exit status 1).
			return nil, fmt.Errorf("--seeds: item %d is node %d, beyond the graph's %d nodes (ids must be below %d)", i+1, v, numNodes, numNodes)
		}
		out = append(out, uint32(v))
	}
	return out, nil
}
