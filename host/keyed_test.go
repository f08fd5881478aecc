package host

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/rng"
)

// TestSampleLayerKeyed: a keyed layer over an epoch's frontier_l under
// key.Layer(l) is SampleEpoch's layer l, and under any other key (a
// relation's) it is ReferenceLayerKeyed's, edge ids and full layers
// included, on 1 and 3 devices.
func TestSampleLayerKeyed(t *testing.T) {
	g := randomCSR(3000, 7, 5)
	dir := writeGraph(t, g, 2048)
	seeds := randomSeeds(3000, 40, 9)
	fanouts := []int{4, epoch.AllNeighbors, 3}
	for _, tc := range []struct {
		devices int
		replace bool
	}{{1, false}, {3, true}} {
		s := openSampler(t, dir, Options{Devices: tc.devices, MaxTargets: 5, EdgeIDs: true})
		key := epoch.Key{Seed: 11, Epoch: 2, Replace: tc.replace}
		want, err := s.SampleEpoch(context.Background(), seeds, fanouts, key)
		if err != nil {
			t.Fatal(err)
		}
		for l, k := range fanouts {
			fr := want.Layers[l].Frontier
			got, ls, err := s.SampleLayerKeyed(context.Background(), l, fr, k, key.Layer(l), tc.replace)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want.Layers[l]) {
				t.Fatalf("devices %d layer %d: keyed layer differs from SampleEpoch's", tc.devices, l)
			}
			if ls.Targets != len(fr) || ls.Fanout != k {
				t.Errorf("stats: %+v", ls)
			}
			rk := rng.RelationKey(key.Seed, key.Epoch, l, 3)
			got, _, err = s.SampleLayerKeyed(context.Background(), l, fr, k, rk, tc.replace)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := ReferenceLayerKeyed(g, l, fr, k, rk, tc.replace, true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Fatalf("devices %d layer %d: keyed layer under a relation key differs from the keyed reference", tc.devices, l)
			}
			if k != epoch.AllNeighbors && reflect.DeepEqual(got.Samples, want.Layers[l].Samples) {
				t.Fatalf("layer %d: the relation key gave the same samples as the layer key", l)
			}
		}
	}
}

// TestSampleLayerKeyedBadInput: each bad argument is ErrInvalid with a
// message naming it.
func TestSampleLayerKeyedBadInput(t *testing.T) {
	g := randomCSR(100, 3, 1)
	s := openSampler(t, writeGraph(t, g, 1024), Options{})
	for _, tc := range []struct {
		name     string
		layer    int
		frontier []uint32
		fanout   int
		want     string
	}{
		{"fanout 0", 0, []uint32{1}, 0, "fanout 0"},
		{"fanout 65", 0, []uint32{1}, 65, "fanout 65"},
		{"unsorted", 0, []uint32{3, 2}, 2, "not sorted"},
		{"repeat", 0, []uint32{2, 2}, 2, "not sorted and unique"},
		{"beyond", 0, []uint32{100}, 2, "node 100"},
		{"layer", epoch.MaxLayers, []uint32{1}, 2, "layer 255"},
	} {
		_, _, err := s.SampleLayerKeyed(context.Background(), tc.layer, tc.frontier, tc.fanout, 1, false)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", tc.name, err, tc.want)
		}
		_, err = ReferenceLayerKeyed(g, tc.layer, tc.frontier, tc.fanout, 1, false, false)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reference %s: %v, want ErrInvalid naming %q", tc.name, err, tc.want)
		}
	}
}
