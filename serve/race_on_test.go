//go:build race

package serve

// raceEnabled: the race detector multiplies memory, so RSS bounds are
// only logged.
const raceEnabled = true
