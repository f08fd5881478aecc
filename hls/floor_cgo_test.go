//go:build cgo

package hls

import (
	"slices"
	"testing"
)

func init() { floorImpl, floorName = gatherFloorC, "c" }

// The C floor and the Go floor do the same reads and write the same rows.
func TestGatherFloorsAgree(t *testing.T) {
	g := &gen{s: 6}
	adj := g.randomAdj(300, []int{0, 2, 15, 16, 40, 500})
	chunk := buildChunk(100, adj, 0)
	targets := allNodes(100, len(adj))
	for _, k := range []int{1, 10, 15} {
		a, b := make([]int32, len(targets)*k), make([]int32, len(targets)*k)
		gatherFloorC(chunk, targets, a, k, 99)
		gatherFloor(chunk, targets, b, k, 99)
		if !slices.Equal(a, b) {
			t.Fatalf("k %d: C and Go floors differ", k)
		}
	}
}
