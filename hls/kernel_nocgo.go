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
