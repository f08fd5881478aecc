package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"
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
		{"-1", nil, false},
		{"a", nil, false},
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
		ids, err := parseNodeList(s)
		if err != nil {
			return
		}
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		if len(parts) != len(ids) {
			t.Fatalf("%q: %d ids from %d items", s, len(ids), len(parts))
		}
		for i, p := range parts {
			v, err := strconv.ParseUint(p, 10, 32)
			if err != nil || uint32(v) != ids[i] {
				t.Fatalf("%q: item %d = %d", s, i, ids[i])
			}
		}
	})
}

// FuzzParseFanouts: never panics; accepted fanouts are positive.
func FuzzParseFanouts(f *testing.F) {
	for _, s := range []string{"15,10,5", "", "0", "3,x", "99999999999999999999"} {
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
		for _, k := range fan {
			if k < 1 {
				t.Fatalf("%q: fanout %d", s, k)
			}
		}
	})
}
