package heterosample

import (
	"compress/gzip"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
)

// musaeTyped cuts the bundled musae-facebook graph into a typed one by its
// pages' own types (facebook_target.csv: company, government, politician,
// tvshow): node v becomes the next local id of its type, and each of the
// 16 (src type, dst type) pairs is a relation "likes" holding exactly the
// in-edges between them, as PyG samples them (ingest.Build with Reverse,
// duplicates kept).
func musaeTyped(t *testing.T) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "g")
	if _, err := ingest.Build(context.Background(), []string{filepath.Join("..", "testdata", "musae-facebook", "facebook_edges.csv.gz")}, dir,
		ingest.BuildOptions{Reverse: true, ChunkSize: 256 << 10}); err != nil {
		t.Fatal(err)
	}
	g, err := host.LoadCSR(dir)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(filepath.Join("..", "testdata", "musae-facebook", "facebook_target.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(zr).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := g.NumNodes()
	typeOf, local := make([]int, n), make([]uint32, n)
	names := []string{"company", "government", "politician", "tvshow"}
	var counts [4]uint32
	for _, row := range rows[1:] {
		id, err := strconv.Atoi(row[0])
		if err != nil || uint32(id) >= n {
			t.Fatalf("facebook_target.csv: bad id %q", row[0])
		}
		ty := slices.Index(names, row[3])
		if ty < 0 {
			t.Fatalf("facebook_target.csv: page %d of unknown type %q", id, row[3])
		}
		typeOf[id], local[id] = ty, counts[ty]
		counts[ty]++
	}
	f := &fixture{schema: &heteroepoch.Schema{}}
	for i, name := range names {
		f.schema.NodeTypes = append(f.schema.NodeTypes, heteroepoch.NodeType{Name: name, Count: counts[i]})
	}
	for s := range names {
		for d := range names {
			f.schema.Relations = append(f.schema.Relations, heteroepoch.Relation{Src: names[s], Name: "likes", Dst: names[d]})
			c := &host.CSR{Indptr: make([]uint64, 1, max(counts[s], counts[d])+1)}
			for v := uint32(0); v < n; v++ {
				if typeOf[v] != d {
					continue
				}
				nb, _ := g.Neighbors(v)
				for _, u := range nb {
					if typeOf[u] == s {
						c.Indices = append(c.Indices, local[u])
					}
				}
				c.Indptr = append(c.Indptr, uint64(len(c.Indices)))
			}
			for uint32(len(c.Indptr)) < max(counts[s], counts[d])+1 {
				c.Indptr = append(c.Indptr, uint64(len(c.Indices)))
			}
			f.csrs = append(f.csrs, c)
		}
	}
	return f
}

// TestPyGBundledMusae: on the bundled musae-facebook graph typed by its
// pages' types (4 node types, 16 relations), a streamed heterogeneous
// epoch equals the keyed reference, and minibatches of politicians and of
// politicians with tvshows assemble to brutePyG's HeteroData fields, edge
// ids included.
func TestPyGBundledMusae(t *testing.T) {
	f := musaeTyped(t)
	dirs := f.write(t, 64<<10)
	s, err := Open(f.schema, dirs, Options{Host: host.Options{Devices: 2, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pol := pick(f.schema.NodeTypes[2].Count, 400, 3)
	tv := pick(f.schema.NodeTypes[3].Count, 100, 4)
	fanouts, err := f.schema.FanoutsFromMap(map[string][]int{"politician___likes___politician": {10, 5}, "tvshow___likes___politician": {-1, 2}}, []int{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	key := epoch.Key{Seed: 8, Epoch: 1}
	seeds := []heteroepoch.Seeds{{Type: "politician", Nodes: pol}, {Type: "tvshow", Nodes: tv}}
	res, err := s.SampleEpoch(context.Background(), seeds, fanouts, key)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference(f.schema, f.graphs(), seeds, fanouts, key, true)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, res, ref)
	for b := 0; b < 4; b++ {
		batch := []heteroepoch.Seeds{{Type: "politician", Nodes: pol[b*64 : (b+1)*64]}}
		if b >= 2 {
			batch = append(batch, heteroepoch.Seeds{Type: "tvshow", Nodes: tv[b*16 : (b+1)*16]})
		}
		got, err := res.AssemblePyG(batch)
		if err != nil {
			t.Fatal(err)
		}
		requirePyG(t, f.schema, got, brutePyG(f.schema, f.csrs, batch, fanouts, key))
		var reached int
		for _, nd := range got.Nodes {
			if len(nd.NID) > 0 {
				reached++
			}
		}
		if reached < 3 {
			t.Fatalf("minibatch %d reaches %d node types, want at least 3", b, reached)
		}
	}
}
