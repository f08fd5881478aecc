package heteroepoch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// A schema that contradicts itself, and fanouts of the wrong shape or
// range, are ErrInvalid naming what is wrong; PyG's num_neighbors dict
// rules (FanoutsFromMap) take a default for the relations not named,
// refuse a key naming no relation, and need a list for every relation
// without a default.
func TestSchemaChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema Schema
		want   string
	}{
		{"unknown relation type", Schema{NodeTypes: []NodeType{{Name: "a", Count: 1}}, Relations: []Relation{{Src: "a", Name: "r", Dst: "b"}}}, `relation 0 (a___r___b): unknown node type "b"`},
		{"type twice", Schema{NodeTypes: []NodeType{{Name: "a", Count: 1}, {Name: "a", Count: 2}}, Relations: []Relation{{Src: "a", Name: "r", Dst: "a"}}}, `node type "a" listed twice`},
		{"relation twice", Schema{NodeTypes: []NodeType{{Name: "a", Count: 1}}, Relations: []Relation{{Src: "a", Name: "r", Dst: "a"}, {Src: "a", Name: "r", Dst: "a"}}}, "relation a___r___a listed twice"},
	} {
		if err := tc.schema.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid with %q", tc.name, err, tc.want)
		}
	}
	s := tinySchema()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fanouts [][]int
		want    string
	}{
		{[][]int{{2, 2}, {2}, {2, 2}}, "relation paper___cites___paper has 1 fanouts but relation author___writes___paper has 2"},
		{[][]int{{2}, {2}}, "2 fanout lists for 3 relations"},
		{[][]int{{2}, {MaxFanout + 1}, {2}}, "relation paper___cites___paper: fanout 65 of layer 0"},
		{[][]int{{2}, {-2}, {2}}, "fanout -2"},
		{[][]int{{}, {}, {}}, "0 fanouts"},
	} {
		if _, err := s.NumLayers(tc.fanouts); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fanouts %v: %v, want ErrInvalid with %q", tc.fanouts, err, tc.want)
		}
	}
	if L, err := s.NumLayers([][]int{{0, epoch.AllNeighbors}, {MaxFanout, 1}, {1, 0}}); err != nil || L != 2 {
		t.Errorf("0, -1 and MaxFanout: L %d, %v; want 2 layers", L, err)
	}
	if _, err := s.FanoutsFromMap(map[string][]int{"author___writes___paper": {2}}, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no fanouts for relation paper___cites___paper") {
		t.Errorf("missing relation without default: %v", err)
	}
	if _, err := s.FanoutsFromMap(map[string][]int{"paper___writes___paper": {2}}, []int{1}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"paper___writes___paper", which is not a relation`) {
		t.Errorf("unknown relation: %v", err)
	}
	got, err := s.FanoutsFromMap(map[string][]int{"paper___cites___paper": {5, 0}}, []int{1, 2})
	if err != nil || !slices.Equal(got[0], []int{1, 2}) || !slices.Equal(got[1], []int{5, 0}) || !slices.Equal(got[2], []int{1, 2}) {
		t.Errorf("default: %v %v", got, err)
	}
	// Request: the seeds by type, sorted as given (not deduplicated:
	// the sampler makes frontier_0), checked against their types.
	L, byType, err := s.Request(3, "samplers", []Seeds{{Type: "paper", Nodes: []uint32{3, 1}}}, [][]int{{1}, {1}, {1}})
	if err != nil || L != 1 || len(byType[0]) != 0 || !slices.Equal(byType[1], []uint32{3, 1}) {
		t.Errorf("Request: L %d, by type %v, %v", L, byType, err)
	}
	if _, _, err := s.Request(2, "samplers", []Seeds{{Type: "paper", Nodes: []uint32{1}}}, [][]int{{1}, {1}, {1}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "samplers") {
		t.Errorf("Request with 2 samplers for 3 relations: %v", err)
	}
}
