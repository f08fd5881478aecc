package fullscan

import (
	"context"
	"io"
	"testing"

	"github.com/streamsampler/streamsampler/internal/testgraph"
)

// BenchmarkScan: a whole pass over a random graph of 1 Mi nodes (avg
// degree 16, 4 MiB chunks, page cache warm after the first), batch 4096,
// with edge ids: edges per second of the cut, relabelled through the hash
// table sized by the minibatch and through the dense table over every
// node.
//
//	go test ./fullscan -run '^$' -bench Scan -benchtime 3x
func BenchmarkScan(b *testing.B) {
	indptr, indices := testgraph.RandomCSR(1<<20, 16, 1)
	dir := writeGraph(b, indptr, indices, 4<<20)
	for _, table := range []struct {
		name  string
		bytes int64
	}{{"hash", 0}, {"dense", 1 << 30}} {
		b.Run(table.name, func(b *testing.B) { benchScan(b, dir, len(indices), table.bytes) })
	}
}

func benchScan(b *testing.B, dir string, edges int, tableBytes int64) {
	b.SetBytes(int64(edges) * 4)
	for range b.N {
		s, err := Open(dir, Options{BatchSize: 4096, EdgeIDs: true, TableBytes: tableBytes})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := s.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
	b.ReportMetric(float64(edges)*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
}
