package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/statedir"
)

// flagName is the command-line flag of a StateConfig field.
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// stateConfigFor reconciles a command's flags with the configuration of
// the state directory's contents c (statedir.MergeConfig): set reports
// which fields the command gives. It returns the configuration, whether
// it is new (to be written before the first epoch), and the graph's
// manifest, checked against the recorded fingerprint. It writes nothing.
func stateConfigFor(st statedir.State, c *statedir.Contents, given statedir.Config, set func(field string) bool) (cfg statedir.Config, fresh bool, m *chunkfmt.Manifest, err error) {
	if set(statedir.FieldCompress) && given.Compress != "" && given.Compress != "zstd" {
		return cfg, false, nil, usagef("--compress %q: want zstd or nothing", given.Compress)
	}
	rec, have := c.Config, c.Committed
	for _, p := range []*string{&given.Graph, &given.Train} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return cfg, false, nil, err
			}
		}
	}
	var recorded *statedir.Config
	if have {
		recorded = &rec
	}
	cfg, err = statedir.MergeConfig(recorded, given, set)
	var conflict *statedir.ConflictError
	var missing *statedir.MissingError
	switch {
	case errors.As(err, &conflict):
		return cfg, false, nil, usagef("--%s %v conflicts with %v recorded in %s; use a new state directory",
			flagName(conflict.Field), flagValue(conflict.Given), flagValue(conflict.Recorded), st.ConfigPath())
	case errors.As(err, &missing):
		return cfg, false, nil, usagef("--%s is required on the first prepare of %s", flagName(missing.Field), st.Dir)
	case errors.Is(err, epoch.ErrConfig):
		return cfg, false, nil, usageError{err}
	case err != nil:
		return cfg, false, nil, err
	}
	m, err = chunkfmt.ReadManifest(cfg.Graph)
	if err != nil {
		if have {
			return cfg, false, nil, fmt.Errorf("graph of state %s: %w", st.Dir, err)
		}
		return cfg, false, nil, err
	}
	if !have {
		cfg.Fingerprint = m.Fingerprint()
	} else if err := cfg.CheckGraph(m); err != nil {
		return cfg, false, nil, fmt.Errorf("%s: %w", st.ConfigPath(), err)
	}
	return cfg, !have, m, nil
}

// flagValue prints a StateConfig field's value as its flag takes it.
func flagValue(v any) string {
	if ints, ok := v.([]int); ok {
		parts := make([]string, len(ints))
		for i, k := range ints {
			parts[i] = strconv.Itoa(k)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// openCommitted opens and checks a state directory (statedir.State.Open)
// that must hold a committed configuration; one without is an error that
// says what to run first.
func openCommitted(st statedir.State) (*statedir.Contents, error) {
	c, err := st.Open()
	if err != nil {
		return nil, err
	}
	if !c.Committed {
		return nil, notStateDir(st)
	}
	return c, nil
}

// notStateDir is the error for a directory without a committed state.
func notStateDir(st statedir.State) error {
	return fmt.Errorf("%s is not a state directory (no %s with a committed epoch): run prepare first", st.Dir, statedir.ConfigName)
}

// requireDir reports a state directory that does not exist as not one.
func requireDir(st statedir.State) error {
	if _, err := os.Stat(st.Dir); errors.Is(err, fs.ErrNotExist) {
		return notStateDir(st)
	}
	return nil
}

// lockAndClean takes the state directory's lock and removes what
// interrupted runs left there (statedir.State.Clean), reporting each removal
// on w (nil: silently): advance's start. The commands that write epochs
// begin a statedir.Txn instead. The caller must call unlock.
func lockAndClean(st statedir.State, w io.Writer) (c *statedir.Contents, unlock func(), err error) {
	release, err := st.Lock()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if c, err = st.Open(); err != nil {
		return nil, nil, err
	}
	removed, err := st.Clean(c)
	if w != nil {
		for _, l := range removed {
			reportRemoved(w, st, l)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	// What is left is the committed state alone.
	if c, err = st.Open(); err != nil {
		return nil, nil, err
	}
	return c, release, nil
}

// reportRemoved says what Clean removed, one line each.
func reportRemoved(w io.Writer, st statedir.State, l statedir.Leftover) {
	fmt.Fprintf(w, "removed %s: %s\n", filepath.Join(st.Dir, l.Name), l.Why)
}

// bindTrainSet records the training nodes' identity in a new state
// configuration, or checks them against the recorded one: a training file
// whose content changed since the first epoch is refused.
func bindTrainSet(cfg *statedir.Config, fresh bool, train []uint32) error {
	got := epochdir.TrainSetOf(train)
	if fresh {
		cfg.TrainSet = got
		return nil
	}
	if got != cfg.TrainSet {
		return fmt.Errorf("training nodes in %s (%d, CRC-32C %08x) are not those recorded in %s (%d, CRC-32C %08x): the file changed since the first prepare; use a new state directory",
			cfg.Train, got.Count, got.CRC32C, statedir.ConfigName, cfg.TrainSet.Count, cfg.TrainSet.CRC32C)
	}
	return nil
}

// checkStateGraph checks the graph a state directory records against its
// fingerprint.
func checkStateGraph(st statedir.State, cfg statedir.Config) error {
	m, err := chunkfmt.ReadManifest(cfg.Graph)
	if err != nil {
		return fmt.Errorf("graph of state %s: %w", st.Dir, err)
	}
	if err := cfg.CheckGraph(m); err != nil {
		return fmt.Errorf("%s: %w", st.ConfigPath(), err)
	}
	return nil
}

// readSampling reads the training nodes of trainPath for a graph of
// numNodes nodes and checks the Sampling they make: a bad one (an empty
// training file, fewer nodes than ranks, a fanout out of range) is a usage
// error naming the file where it is about the file.
func readSampling(s epoch.Sampling, trainPath string, numNodes uint32) (epoch.Sampling, error) {
	train, err := ingest.ReadNodeIDs(trainPath, numNodes)
	if err != nil {
		return s, fmt.Errorf("training nodes: %w", err)
	}
	s.Train = train
	if err := s.Check(); err != nil {
		if len(train) == 0 {
			return s, usagef("--train %s holds no node ids: want at least one training node", trainPath)
		}
		return s, usageError{err}
	}
	return s, nil
}
