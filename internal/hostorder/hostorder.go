// Package hostorder answers one question for the whole project: is this
// machine's memory order for integers the little-endian order that every
// file and wire format here uses (edges.chunks, epoch arrays, the serve
// protocol, device buffers)? Where it is, a []uint32 or []int32 is
// already its own encoding and can be written, read or sent without a
// copy; Bytes and Words give those views.
//
// LittleEndian is a constant, chosen by build tags, so that the code for
// the other order is compiled out where it cannot run.
package hostorder

import "unsafe"

// Bytes views a's memory as bytes, 4 or 8 per word, without copying: the
// little-endian encoding of a when LittleEndian, host order otherwise.
// The view aliases a. It is nil for an empty a.
func Bytes[W ~uint32 | ~int32 | ~uint64 | ~int64](a []W) []byte {
	if len(a) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a)*int(unsafe.Sizeof(a[0])))
}

// Words views b as the little-endian uint32 words it holds, without
// copying; a trailing partial word is left out. ok is false, and the
// caller must decode instead, where no such view exists: on a big-endian
// host, or when b is not 4-byte aligned.
func Words(b []byte) (w []uint32, ok bool) {
	if !LittleEndian {
		return nil, false
	}
	if len(b) < 4 {
		return []uint32{}, true
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4), true
}
