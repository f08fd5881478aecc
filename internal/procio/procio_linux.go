package procio

import (
	"fmt"
	"os"
)

// Self reads /proc/self/io.
func Self() (Counters, error) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return Counters{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer f.Close()
	return Parse(f)
}
