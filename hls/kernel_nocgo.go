//go:build !cgo

package hls

// Engine names the implementation behind Run: without cgo, the Go
// reference.
const Engine = "go-reference"

// Run samples fanout neighbors of every target into out (row r for
// targets[r], -1 in empty slots). Built without cgo it is Reference.
func Run(chunk []uint32, targets []uint32, out []int32, fanout int, key uint64, replace bool) error {
	return Reference(chunk, targets, out, fanout, key, replace)
}

// RunEdges is Run that also writes each slot's chunk-local edge index
// into edges when it is not nil. Built without cgo it is ReferenceEdges.
func RunEdges(chunk []uint32, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error {
	return ReferenceEdges(chunk, targets, out, edges, fanout, key, replace)
}

// RunWalk computes k candidates of one random-walk step for every walker
// (node nodes[r] on walk walks[r]) into out. Built without cgo it is
// ReferenceWalk.
func RunWalk(chunk []uint32, nodes, walks []uint32, out []int32, k int, key uint64, attempt0 uint32) error {
	return ReferenceWalk(chunk, nodes, walks, out, k, key, attempt0)
}

// RunWalkEdges is RunWalk that also writes each candidate's chunk-local
// edge index into edges when it is not nil. Built without cgo it is
// ReferenceWalkEdges.
func RunWalkEdges(chunk []uint32, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error {
	return ReferenceWalkEdges(chunk, nodes, walks, out, edges, k, key, attempt0)
}

// RunAll runs the copy-all mode (fanout -1). Built without cgo it is
// ReferenceAll.
func RunAll(chunk, targets []uint32, skip uint32, counts, out, edges []int32) (AllProgress, error) {
	return ReferenceAll(chunk, targets, skip, counts, out, edges)
}

// RunAllRaw is the copy-all mode over one result buffer laid out as the
// kernel's. Built without cgo it is ReferenceAllRaw.
func RunAllRaw(chunk, targets []uint32, result []int32, capacity int, skip uint32, edges bool) error {
	return ReferenceAllRaw(chunk, targets, result, capacity, skip, edges)
}
