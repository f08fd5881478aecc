package heterosample

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/ingest/ingesttest"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/host"
)

// buildMini builds the bundled testdata/hetero-mini into a heterogeneous
// graph directory, as chunkify build --ogb-raw --add-reverse does.
func buildMini(t *testing.T) string { return ingesttest.HeteroMini(t, filepath.Join("..", "testdata")) }

// A heterogeneous directory built by chunkify's pipeline opens by its
// hetero.json alone (OpenDir): the schema is the manifest's, in its order,
// and a streamed epoch over it equals the keyed reference over the CSRs
// read back from the relations' own directories, bit for bit, with its
// PyG minibatches those brutePyG renders.
func TestOpenDirBuilt(t *testing.T) {
	dir := buildMini(t)
	s, schema, err := OpenDir(dir, Options{Host: host.Options{Devices: 3, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := heterofmt.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(schema.Relations) != len(m.Relations) || len(schema.NodeTypes) != len(m.NodeTypes) {
		t.Fatalf("schema %+v from manifest %+v", schema, m)
	}
	_, dirs := SchemaOf(dir, m)
	var csrs []*host.CSR
	var graphs []host.Adjacency
	for r, d := range dirs {
		if schema.Relations[r].String() != m.Relations[r].Key() {
			t.Fatalf("relation %d: %s, manifest %s", r, schema.Relations[r], m.Relations[r].Key())
		}
		c, err := host.LoadCSR(d)
		if err != nil {
			t.Fatal(err)
		}
		csrs, graphs = append(csrs, c), append(graphs, c)
	}
	seedType := schema.NodeTypes[0]
	seeds := []heteroepoch.Seeds{{Type: seedType.Name, Nodes: pick(seedType.Count, int(min(200, seedType.Count)), 5)}}
	fanouts, err := schema.FanoutsFromMap(nil, []int{5, 3})
	if err != nil {
		t.Fatal(err)
	}
	key := epoch.Key{Seed: 3, Epoch: 2}
	res, err := s.SampleEpoch(context.Background(), seeds, fanouts, key)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference(schema, graphs, seeds, fanouts, key, true)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, res, ref)
	batch := []heteroepoch.Seeds{{Type: seedType.Name, Nodes: seeds[0].Nodes[:min(64, len(seeds[0].Nodes))]}}
	got, err := res.AssemblePyG(batch)
	if err != nil {
		t.Fatal(err)
	}
	requirePyG(t, schema, got, brutePyG(schema, csrs, batch, fanouts, key))
}

// A directory whose hetero.json is missing (a build that did not finish)
// or whose relation was replaced is refused before any sampler opens,
// naming what is wrong.
func TestOpenDirRefusesDefects(t *testing.T) {
	dir := buildMini(t)
	if err := os.Remove(filepath.Join(dir, heterofmt.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenDir(dir, Options{}); !errors.Is(err, heterofmt.ErrNoManifest) {
		t.Fatalf("without hetero.json: %v, want ErrNoManifest", err)
	}
}
