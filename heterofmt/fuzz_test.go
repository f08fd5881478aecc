package heterofmt

import (
	"encoding/json"
	"testing"
)

// FuzzParse: Parse never panics, and whatever it accepts is valid and
// encodes back to a manifest it accepts again, equal.
func FuzzParse(f *testing.F) {
	m := Manifest{Version: 1, NodeTypes: []NodeType{{"author", 5}, {"paper", 3}}, Relations: []Relation{
		{Src: "author", Rel: "writes", Dst: "paper", Dir: RelationDir("author", "writes", "paper")},
		{Src: "paper", Rel: "rev_writes", Dst: "author", Dir: RelationDir("paper", "rev_writes", "author"), ReverseOf: Key("author", "writes", "paper")},
	}}
	m.Relations[0].Graph.NumNodes, m.Relations[1].Graph.NumNodes = 5, 5
	m.Checksum = m.ComputeChecksum()
	b, _ := json.Marshal(m)
	f.Add(b)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid manifest: %v", err)
		}
		b2, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Parse(b2)
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v", err)
		}
		if m2.ComputeChecksum() != m.ComputeChecksum() {
			t.Fatal("round trip changed the manifest")
		}
	})
}
