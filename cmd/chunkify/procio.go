package main

import (
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/procio"
)

// buildJSON is what build --json prints: the build's summary, its fields
// at the top level as before, plus the process's I/O counters where the
// system has them.
type buildJSON struct {
	*ingest.Summary
	IO *procio.Counters `json:"io,omitempty"`
}

// selfIO is the process's I/O counters (internal/procio); nil where the
// system keeps none, and build --json leaves the io object out.
func selfIO() *procio.Counters {
	c, err := procio.Self()
	if err != nil {
		return nil
	}
	return &c
}
