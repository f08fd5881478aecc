package statedir

import (
	"fmt"
	"path/filepath"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epochdir"
)

// Reconcile returns the configuration that a command giving given (set
// reports which fields, by Field* name) writes epochs of into s, whose
// contents c are (Open): MergeConfig with the configuration c records
// where it is committed, Graph and Train made absolute first, so that a
// relative path names the same file from any working directory. It reads
// the graph's manifest m: a new configuration takes its fingerprint, a
// recorded one is checked against it (ReadGraph). fresh says that the
// configuration is new (Begin writes it before the first epoch). The
// errors about the fields are MergeConfig's (*ConflictError,
// *MissingError, the others wrapping epoch.ErrConfig), for a command to
// name its flags in. Reconcile writes nothing.
func (s State) Reconcile(c *Contents, given Config, set func(field string) bool) (cfg Config, fresh bool, m *chunkfmt.Manifest, err error) {
	for _, p := range []*string{&given.Graph, &given.Train} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return cfg, false, nil, err
			}
		}
	}
	var recorded *Config
	if c.Committed {
		recorded = &c.Config
	}
	if cfg, err = MergeConfig(recorded, given, set); err != nil {
		return cfg, false, nil, err
	}
	if recorded != nil {
		if m, err = s.ReadGraph(cfg); err != nil {
			return cfg, false, nil, err
		}
		return cfg, false, m, nil
	}
	if m, err = chunkfmt.ReadManifest(cfg.Graph); err != nil {
		return cfg, false, nil, err
	}
	cfg.Fingerprint = m.Fingerprint()
	return cfg, true, m, nil
}

// ReadGraph reads the manifest of the graph that cfg, s's recorded
// configuration, names and checks it against the recorded fingerprint
// (wrapping ErrGraphMismatch): a graph rebuilt or replaced since the
// first epoch is refused, not sampled as if it were the same. Errors name
// the state directory, or its config.json for a mismatch.
func (s State) ReadGraph(cfg Config) (*chunkfmt.Manifest, error) {
	m, err := chunkfmt.ReadManifest(cfg.Graph)
	if err != nil {
		return nil, fmt.Errorf("graph of state %s: %w", s.Dir, err)
	}
	if err := cfg.CheckGraph(m); err != nil {
		return nil, fmt.Errorf("%s: %w", s.ConfigPath(), err)
	}
	return m, nil
}

// BindTrainSet binds the configuration to train, the training nodes read
// from c.Train: a new configuration (fresh) records their identity
// (TrainSet); a recorded one must match it, so that a training file whose
// content changed since the first epoch is refused rather than sampled as
// if it were the same run.
func (c *Config) BindTrainSet(train []uint32, fresh bool) error {
	got := epochdir.TrainSetOf(train)
	if fresh {
		c.TrainSet = got
		return nil
	}
	if got != c.TrainSet {
		return fmt.Errorf("training nodes in %s (%d, CRC-32C %08x) are not those recorded in %s (%d, CRC-32C %08x): the file changed since the first prepare; use a new state directory",
			c.Train, got.Count, got.CRC32C, ConfigName, c.TrainSet.Count, c.TrainSet.CRC32C)
	}
	return nil
}
