//go:build !linux

package atomicfile

// procStart is unknown here.
func procStart(int) uint64 { return 0 }

// ownerAlive cannot tell a dead owner from a live one here, so it says
// alive: RemoveStaleTemps then removes nothing rather than risk a
// running build's directory.
func ownerAlive(owner) bool { return true }
