package featplan

import (
	"encoding/json"
	"testing"
)

func TestReportHandChecked(t *testing.T) {
	// Rows of 1 KiB, cache of 1 row. Minibatch 0 reads rows 0 and 1 (one
	// page: bytes 0..2048 → [0,4096)) and keeps 1; minibatch 1 hits 1 and
	// reads 2 (bytes 2048..3072 → [0,4096)).
	p, err := NewPlan([][]uint32{{0, 1}, {1, 2}}, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Report(1024, DefaultExtentOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := Report{Batches: 2, RowBytes: 1024, CacheRows: 1, RowsNeeded: 4, RowsFromCache: 1,
		RowsFromDisk: 3, Reads: 2, BytesRead: 8192, DiskRowBytes: 3072,
		ReadAmplification: 8192.0 / 3072, DistinctRows: 3, CompulsoryBytes: 3072}
	if got != want {
		t.Fatalf("report %+v\nwant %+v", got, want)
	}
	// Rows far apart: rows 0 and 1000 of 8 KiB are two extents of 8 KiB.
	p, err = NewPlan([][]uint32{{1000, 0}}, 2000, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err = p.Report(8192, DefaultExtentOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got.Reads != 2 || got.BytesRead != 16384 || got.ReadAmplification != 1 || got.CompulsoryBytes != 16384 {
		t.Fatalf("report %+v, want 2 reads of 16384 bytes, amplification 1", got)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rows_needed", "rows_from_cache", "rows_from_disk", "bytes_read", "read_amplification", "compulsory_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON %s lacks %q", b, k)
		}
	}
}
