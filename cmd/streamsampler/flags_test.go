package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
)

func TestParseFanouts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"15,10,5", []int{15, 10, 5}, true},
		{" 3 , 4", []int{3, 4}, true},
		{"", nil, false},
		{"3,,4", nil, false},
		{"0", nil, false},
		{"-1", []int{-1}, true},
		{"-1,10", []int{-1, 10}, true},
		{"10, -1", []int{10, -1}, true},
		{"-1,-1", []int{-1, -1}, true},
		{"-2", nil, false},
		{"-0", nil, false},
		{"a", nil, false},
		{"64,1", []int{64, 1}, true},
		{"65", nil, false},
		{"15,100,5", nil, false},
		{strings.Repeat("1,", 254) + "1", slices.Repeat([]int{1}, 255), true},
		{strings.Repeat("1,", 255) + "1", nil, false},
	} {
		got, err := parseFanouts(tc.in)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parseFanouts(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// FuzzParseNodeList: never panics; what it accepts round-trips.
func FuzzParseNodeList(f *testing.F) {
	for _, s := range []string{"1,2,3", "", " 7 ,", "4294967295", "4294967296", "-1", "1,,2", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const numNodes = 1 << 31
		ids, err := parseNodeList(s, numNodes)
		if err != nil {
			return
		}
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			} else {
				t.Fatalf("%q: accepted with an empty item", s)
			}
		}
		if len(parts) != len(ids) {
			t.Fatalf("%q: %d ids from %d items", s, len(ids), len(parts))
		}
		for i, p := range parts {
			v, err := strconv.ParseUint(p, 10, 32)
			if err != nil || uint32(v) != ids[i] || v >= numNodes {
				t.Fatalf("%q: item %d = %d", s, i, ids[i])
			}
		}
	})
}

// FuzzParseFanouts: never panics; accepted fanouts are positive.
// TestParseNodeList: ids below the graph's node count, no empty items;
// each error names what was wrong.
func TestParseNodeList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint32
		err  string
	}{
		{"3,5, 7 ", []uint32{3, 5, 7}, ""},
		{"9", []uint32{9}, ""},
		{"3,,5", nil, `--seeds "3,,5": item 2 is empty`},
		{"3,5,", nil, `--seeds "3,5,": item 3 is empty`},
		{",3", nil, "item 1 is empty"},
		{"3, ,5", nil, "item 2 is empty"},
		{"3,x", nil, `item 2 ("x") is not a node id`},
		{"3,10", nil, "item 2 is node 10, beyond the graph's 10 nodes"},
		{"4294967296", nil, `item 1 ("4294967296") is not a node id`},
	} {
		got, err := parseNodeList(tc.in, 10)
		if tc.err == "" {
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("parseNodeList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseNodeList(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		}
	}
}

func FuzzParseFanouts(f *testing.F) {
	for _, s := range []string{"15,10,5", "", "0", "3,x", "99999999999999999999", "-1,10", "-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fan, err := parseFanouts(s)
		if err != nil {
			return
		}
		if len(fan) == 0 {
			t.Fatalf("%q: accepted with no fanouts", s)
		}
		if len(fan) > epoch.MaxLayers {
			t.Fatalf("%q: %d fanouts accepted", s, len(fan))
		}
		for _, k := range fan {
			if (k < 1 || k > hls.MaxFanout) && k != epoch.AllNeighbors {
				t.Fatalf("%q: fanout %d", s, k)
			}
		}
	})
}

// TestGPUFlagsOnlyWhereABackendOpens: the --gpu-* flags belong to the
// backend flag group, so the commands that open a backend have them (with
// their defaults: --gpu-device -1 follows $LOCAL_RANK) and the others reject them.
func TestGPUFlagsOnlyWhereABackendOpens(t *testing.T) {
	gpuFlags := map[string]string{"gpu-lib": "", "gpu-device": "-1", "gpu-uva": "false", "gpu-mode": "bsp", "gpu-timeout": "1m0s"}
	root := newRootCmd()
	with := map[string]bool{"prepare": true, "run": true, "bench": true, "serve": true, "walk": true}
	seen := 0
	for _, c := range root.Commands() {
		for name, def := range gpuFlags {
			f := c.Flags().Lookup(name)
			if with[c.Name()] {
				if f == nil || f.DefValue != def {
					t.Errorf("%s: --%s missing or default %v, want %q", c.Name(), name, f, def)
				}
			} else if f != nil || c.InheritedFlags().Lookup(name) != nil {
				t.Errorf("%s: has --%s but opens no backend", c.Name(), name)
			}
		}
		if with[c.Name()] {
			seen++
		}
	}
	if seen != len(with) {
		t.Fatalf("found %d of the %d backend commands", seen, len(with))
	}
	if _, e, code := cli(t, "info", "--gpu-lib", "x"); code == 0 || !strings.Contains(e, "unknown flag: --gpu-lib") {
		t.Fatalf("info --gpu-lib: exit %d, %s", code, e)
	}
}
