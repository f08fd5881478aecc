package statedir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// ErrGraphMismatch is wrapped when a state directory belongs to another
// graph (or the graph was rebuilt since).
var ErrGraphMismatch = errors.New("state directory was prepared from another graph")

// Config is a state directory's config.json: what every epoch in it
// is sampled from. The first command that writes an epoch records it,
// before the epoch is installed; later ones may leave fields out, and a
// field given with another value than the recorded one is refused
// (MergeConfig). Every epoch's manifest repeats the fields that
// decide its content (Identity, the Key, the fanouts), and State.Open
// refuses a directory whose parts disagree.
type Config struct {
	Graph       string               `json:"graph"` // absolute path
	Fingerprint chunkfmt.Fingerprint `json:"fingerprint"`
	Train       string               `json:"train"` // absolute path
	TrainSet    epochdir.TrainSet    `json:"train_set"`
	Fanouts     []int                `json:"fanouts"`
	Seed        uint64               `json:"seed"`
	Replace     bool                 `json:"replace"`
	Rank        int                  `json:"rank"`
	WorldSize   int                  `json:"world_size"`
	Compress    string               `json:"compress,omitempty"` // "" or "zstd"
	// EdgeIDs: every epoch is sampled with edge ids (Layer.EdgeIDs).
	// Omitted when false, so older directories keep their checksum.
	EdgeIDs bool `json:"edge_ids,omitempty"`
	// Checksum is a CRC-32C over the other fields' canonical encoding
	// (WriteConfig fills it), so that an edit is refused.
	Checksum uint32 `json:"checksum"`
}

// Identity returns the Identity every epoch of the configuration records.
func (c Config) Identity() epochdir.Identity {
	return epochdir.Identity{Graph: c.Fingerprint, Train: c.TrainSet, Rank: c.Rank, WorldSize: c.WorldSize}
}

// checksum returns the configuration's metaChecksum.
func (c Config) checksum() uint32 {
	c.Checksum = 0
	return crc32c.OfJSON(c)
}

// The fields of a Config that a command may give, by their
// config.json names (the command lines' flags are these with '-' for '_').
const (
	FieldGraph     = "graph"
	FieldTrain     = "train"
	FieldFanouts   = "fanouts"
	FieldSeed      = "seed"
	FieldReplace   = "replace"
	FieldRank      = "rank"
	FieldWorldSize = "world_size"
	FieldCompress  = "compress"
	FieldEdgeIDs   = "edge_ids"
)

// Sampling returns the Sampling the configuration records, with train as
// its training nodes (read from c.Train).
func (c Config) Sampling(train []uint32) epoch.Sampling {
	return epoch.Sampling{Train: train, Fanouts: slices.Clone(c.Fanouts), Seed: c.Seed, Replace: c.Replace, Rank: c.Rank, World: c.WorldSize}
}

// CheckGraph reports (wrapping ErrGraphMismatch) whether m, the graph's
// manifest now, is not the graph the configuration was recorded from.
func (c Config) CheckGraph(m *chunkfmt.Manifest) error {
	if fp := m.Fingerprint(); fp != c.Fingerprint {
		return fmt.Errorf("%w: it records %s with %d nodes, %d edges, %d chunks (chunk CRCs %08x); that graph now has %d nodes, %d edges, %d chunks (chunk CRCs %08x)",
			ErrGraphMismatch, c.Graph,
			c.Fingerprint.NumNodes, c.Fingerprint.NumEdges, c.Fingerprint.Chunks, c.Fingerprint.ChunkCRCs,
			fp.NumNodes, fp.NumEdges, fp.Chunks, fp.ChunkCRCs)
	}
	return nil
}

// ConflictError is MergeConfig's error for a field given with
// another value than the recorded one. It wraps ErrConfig.
type ConflictError struct {
	Field    string // a Field* name
	Given    any
	Recorded any
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %v conflicts with %v recorded in %s; use a new state directory", e.Field, e.Given, e.Recorded, ConfigName)
}

// Unwrap returns ErrConfig.
func (e *ConflictError) Unwrap() error { return epoch.ErrConfig }

// MissingError is MergeConfig's error for a field a new state
// directory needs and that was not given. It wraps ErrConfig.
type MissingError struct{ Field string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s is required for a new state directory", e.Field)
}

// Unwrap returns ErrConfig.
func (e *MissingError) Unwrap() error { return epoch.ErrConfig }

// MergeConfig reconciles the fields of given that the caller set
// (set reports which, by Field* name) with a state directory's recorded
// configuration (nil for a new directory). With a recorded one, a set
// field must equal it (else *ConflictError) and unset fields keep it. A
// new directory needs graph, train and fanouts (else *MissingError);
// world_size 0 means 1. Graph and Train are compared as given: pass
// absolute paths. The Fingerprint is the caller's to fill.
func MergeConfig(recorded *Config, given Config, set func(field string) bool) (Config, error) {
	var cfg Config
	if recorded != nil {
		cfg = *recorded
		cfg.Fanouts = slices.Clone(cfg.Fanouts)
	}
	for _, f := range []struct {
		name          string
		same          bool
		given, record any
		take          func()
	}{
		{FieldGraph, given.Graph == cfg.Graph, given.Graph, cfg.Graph, func() { cfg.Graph = given.Graph }},
		{FieldTrain, given.Train == cfg.Train, given.Train, cfg.Train, func() { cfg.Train = given.Train }},
		{FieldFanouts, slices.Equal(given.Fanouts, cfg.Fanouts), given.Fanouts, cfg.Fanouts, func() { cfg.Fanouts = slices.Clone(given.Fanouts) }},
		{FieldSeed, given.Seed == cfg.Seed, given.Seed, cfg.Seed, func() { cfg.Seed = given.Seed }},
		{FieldReplace, given.Replace == cfg.Replace, given.Replace, cfg.Replace, func() { cfg.Replace = given.Replace }},
		{FieldRank, given.Rank == cfg.Rank, given.Rank, cfg.Rank, func() { cfg.Rank = given.Rank }},
		{FieldWorldSize, given.WorldSize == cfg.WorldSize, given.WorldSize, cfg.WorldSize, func() { cfg.WorldSize = given.WorldSize }},
		{FieldCompress, given.Compress == cfg.Compress, given.Compress, cfg.Compress, func() { cfg.Compress = given.Compress }},
		{FieldEdgeIDs, given.EdgeIDs == cfg.EdgeIDs, given.EdgeIDs, cfg.EdgeIDs, func() { cfg.EdgeIDs = given.EdgeIDs }},
	} {
		if !set(f.name) {
			continue
		}
		if recorded != nil && !f.same {
			return cfg, &ConflictError{Field: f.name, Given: f.given, Recorded: f.record}
		}
		f.take()
	}
	if recorded != nil {
		return cfg, nil
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{FieldGraph, cfg.Graph == ""}, {FieldTrain, cfg.Train == ""}, {FieldFanouts, cfg.Fanouts == nil}} {
		if f.missing {
			return cfg, &MissingError{Field: f.name}
		}
	}
	if cfg.WorldSize == 0 {
		cfg.WorldSize = 1
	}
	if cfg.Compress != "" && cfg.Compress != "zstd" {
		return cfg, fmt.Errorf("%w: compress %q: want zstd or nothing", epoch.ErrConfig, cfg.Compress)
	}
	return cfg, nil
}

// ConfigPath returns the path of the state directory's config.json.
func (s State) ConfigPath() string { return filepath.Join(s.Dir, ConfigName) }

// WriteConfig stores cfg, with its checksum, as config.json, atomically.
// A first prepare writes it before its epoch, so that no epoch is ever
// installed without the configuration it belongs to.
func (s State) WriteConfig(cfg Config) error {
	cfg.Checksum = cfg.checksum()
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("epoch: state: config: %w", err)
	}
	if err := atomicfile.WriteFile(s.ConfigPath(), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("epoch: state: config: %w", err)
	}
	return nil
}

// RemoveConfig removes config.json durably: the roll-back of a first
// prepare that wrote it and then failed before committing its epoch.
func (s State) RemoveConfig() error {
	if err := os.Remove(s.ConfigPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("epoch: state: %w", err)
	}
	if err := atomicfile.SyncDir(s.Dir); err != nil {
		return fmt.Errorf("epoch: state: %w", err)
	}
	return nil
}

// readConfig decodes config.json strictly (unknown fields and trailing
// data are errors). Its checksum is checked by Open, after the fields
// have been compared with the epochs, so that an edit is reported by the
// field it changed where an epoch shows which.
func readConfig(path string) (Config, error) {
	var cfg Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("epoch: state: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%w: %s: not a valid configuration: %v", epochdir.ErrCorrupt, path, err)
	}
	if dec.More() {
		return cfg, fmt.Errorf("%w: %s: trailing data after the configuration", epochdir.ErrCorrupt, path)
	}
	return cfg, nil
}
