package randread

import "time"

// Stats are what one request read and how long it took.
type Stats struct {
	IO        string       `json:"io"`     // "aio" or "pread"
	Direct    bool         `json:"direct"` // edges.chunks read with O_DIRECT
	BlockSize int          `json:"block_size"`
	Depth     int          `json:"depth"`
	Layers    []LayerStats `json:"layers"`
	// Wall is the whole request; ReadTime the part spent in reads;
	// Assemble the minibatch's assembly (Blocks only).
	Wall     time.Duration `json:"wall_ns"`
	ReadTime time.Duration `json:"read_ns"`
	Assemble time.Duration `json:"assemble_ns"`
}

// LayerStats are one layer's figures.
type LayerStats struct {
	Nodes     int           `json:"nodes"`      // frontier nodes sampled
	Slots     int64         `json:"slots"`      // neighbor words gathered (valid sample slots)
	Blocks    int64         `json:"blocks"`     // distinct blocks those words lie in
	Reused    int64         `json:"reused"`     // of them, blocks read by an earlier layer of the request
	Reads     int64         `json:"reads"`      // read requests (runs of consecutive blocks)
	BytesRead int64         `json:"bytes_read"` // bytes those reads asked for
	ReadTime  time.Duration `json:"read_ns"`
}

// Reads is the request's read requests, all layers.
func (s *Stats) Reads() int64 {
	var n int64
	for _, l := range s.Layers {
		n += l.Reads
	}
	return n
}

// BytesRead is the bytes the request's reads asked for, all layers.
func (s *Stats) BytesRead() int64 {
	var n int64
	for _, l := range s.Layers {
		n += l.BytesRead
	}
	return n
}

// Blocks is the distinct blocks read, all layers.
func (s *Stats) Blocks() int64 {
	var n int64
	for _, l := range s.Layers {
		n += l.Blocks - l.Reused
	}
	return n
}
