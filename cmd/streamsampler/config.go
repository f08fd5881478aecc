package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// errGraphMismatch is wrapped when a state directory belongs to another
// graph (or the graph was rebuilt since).
var errGraphMismatch = errors.New("state directory was prepared from another graph")

// fingerprint identifies a graph directory's content cheaply: its shape
// and a CRC over the chunks' CRC-32C values from the manifest.
type fingerprint struct {
	NumNodes  uint32 `json:"num_nodes"`
	NumEdges  uint64 `json:"num_edges"`
	ChunkSize int64  `json:"chunk_size"`
	Chunks    int    `json:"chunks"`
	ChunkCRCs uint32 `json:"chunk_crcs"` // CRC-32C over the chunks' CRC-32C values, in order
}

func graphFingerprint(m *chunkfmt.Manifest) fingerprint {
	h := crc32c.New()
	var b [4]byte
	for _, c := range m.Chunks {
		binary.LittleEndian.PutUint32(b[:], c.CRC32C)
		h.Write(b[:])
	}
	return fingerprint{NumNodes: m.NumNodes, NumEdges: m.NumEdges, ChunkSize: m.ChunkSize, Chunks: len(m.Chunks), ChunkCRCs: h.Sum32()}
}

// stateConfig is STATEDIR/config.json: what every epoch of the state
// directory is sampled from. The first prepare writes it; later commands
// read it and refuse conflicting flags.
type stateConfig struct {
	Graph       string      `json:"graph"` // absolute path
	Fingerprint fingerprint `json:"fingerprint"`
	Train       string      `json:"train"` // absolute path
	Fanouts     []int       `json:"fanouts"`
	Seed        uint64      `json:"seed"`
	Replace     bool        `json:"replace"`
	Rank        int         `json:"rank"`
	WorldSize   int         `json:"world_size"`
	Compress    string      `json:"compress,omitempty"`
}

// readStateConfig reads config.json; ok is false when there is none yet.
func readStateConfig(st epoch.State) (cfg stateConfig, ok bool, err error) {
	err = st.ReadConfig(&cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	return cfg, true, nil
}

// checkGraph opens dir's manifest and checks it against the recorded
// fingerprint.
func checkGraph(cfg stateConfig, stateDir string) (*chunkfmt.Manifest, error) {
	m, err := chunkfmt.ReadManifest(cfg.Graph)
	if err != nil {
		return nil, fmt.Errorf("graph of state %s: %w", stateDir, err)
	}
	if fp := graphFingerprint(m); fp != cfg.Fingerprint {
		return nil, fmt.Errorf("%w: %s records %s with %d nodes, %d edges, %d chunks (chunk CRCs %08x); it now has %d nodes, %d edges, %d chunks (chunk CRCs %08x)",
			errGraphMismatch, filepath.Join(stateDir, epoch.ConfigName), cfg.Graph,
			cfg.Fingerprint.NumNodes, cfg.Fingerprint.NumEdges, cfg.Fingerprint.Chunks, cfg.Fingerprint.ChunkCRCs,
			fp.NumNodes, fp.NumEdges, fp.Chunks, fp.ChunkCRCs)
	}
	return m, nil
}

func sameInts(a, b []int) bool { return slices.Equal(a, b) }
