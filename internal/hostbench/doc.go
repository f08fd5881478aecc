// Package hostbench measures the streaming sampler against floors taken in
// the same run, as `streamsampler bench` reports it: for each fanout set it
// samples epochs through a host.Backend and holds the epoch wall time to
// the larger of two floors, this file's O_DIRECT sequential read rate (the
// I/O floor) and a random-gather pass over the chunks in memory (the
// memory floor); it then assembles minibatches from the epoch and holds
// them to host.SampleBlocks, an in-memory per-minibatch (DGL-style)
// sampler run on the same thread, and checks the process's peak RSS.
//
// Run does the measuring and returns a Report; Judge holds it to the
// caller's Targets (the package has no thresholds of its own); the Report
// prints itself for people (WriteText) and as one JSON object (WriteJSON).
package hostbench
