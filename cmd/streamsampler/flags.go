package main

import (
	"strconv"
	"strings"
)

// parseFanouts parses "15,10,5".
func parseFanouts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("--fanouts: empty (want e.g. 15,10,5)")
	}
	var out []int
	for i, p := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || k < 1 {
			return nil, usagef("--fanouts %q: item %d (%q) is not a positive integer", s, i+1, p)
		}
		out = append(out, k)
	}
	return out, nil
}

// parseNodeList parses "1,2,3" into node ids.
func parseNodeList(s string) ([]uint32, error) {
	var out []uint32
	for i, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, usagef("--seeds: item %d (%q) is not a node id", i+1, p)
		}
		out = append(out, uint32(v))
	}
	return out, nil
}
