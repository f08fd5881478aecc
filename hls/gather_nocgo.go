//go:build !cgo

package hls

// Gather runs the gather kernel; built without cgo it is GatherReference.
func Gather(blocks, slots []uint32, out []int32, numNodes uint32) error {
	return GatherReference(blocks, slots, out, numNodes)
}
