package chunkfmt

import (
	"encoding/binary"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// Fingerprint identifies a graph directory's content cheaply, from its
// manifest alone: its shape and a CRC over the chunks' CRC-32C values. A
// state directory records it so that epochs are never mixed with samples
// of another graph, or of the same path rebuilt.
type Fingerprint struct {
	NumNodes  uint32 `json:"num_nodes"`
	NumEdges  uint64 `json:"num_edges"`
	ChunkSize int64  `json:"chunk_size"`
	Chunks    int    `json:"chunks"`
	ChunkCRCs uint32 `json:"chunk_crcs"` // CRC-32C over the chunks' CRC-32C values, in order
}

// Fingerprint returns the manifest's Fingerprint.
func (m *Manifest) Fingerprint() Fingerprint {
	h := crc32c.New()
	var b [4]byte
	for _, c := range m.Chunks {
		binary.LittleEndian.PutUint32(b[:], c.CRC32C)
		h.Write(b[:])
	}
	return Fingerprint{NumNodes: m.NumNodes, NumEdges: m.NumEdges, ChunkSize: m.ChunkSize, Chunks: len(m.Chunks), ChunkCRCs: h.Sum32()}
}
