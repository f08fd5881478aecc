package ingest

import "testing"

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true}, {"512B", 512, true}, {"64KiB", 64 << 10, true}, {"64k", 64 << 10, true},
		{"512MiB", 512 << 20, true}, {"512 MiB", 512 << 20, true}, {"1GiB", 1 << 30, true}, {"2g", 2 << 30, true},
		{"1MB", 1000000, true}, {"1TiB", 1 << 40, true},
		{"", 0, false}, {"MiB", 0, false}, {"-5", 0, false}, {"12XB", 0, false}, {"1.5MiB", 0, false}, {"99999999999999TiB", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
