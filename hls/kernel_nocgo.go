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
