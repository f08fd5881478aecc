package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/ingest"
)

// flagName is the command-line flag of a StateConfig field.
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// stateConfigFor reconciles a command's flags with the state directory's
// config.json (epoch.MergeStateConfig): set reports which fields the
// command gives. It returns the configuration, whether it is new (to be
// written once the first epoch exists), and the graph's manifest, checked
// against the recorded fingerprint. It writes nothing.
func stateConfigFor(st epoch.State, given epoch.StateConfig, set func(field string) bool) (cfg epoch.StateConfig, fresh bool, m *chunkfmt.Manifest, err error) {
	if set(epoch.FieldCompress) && given.Compress != "" && given.Compress != "zstd" {
		return cfg, false, nil, usagef("--compress %q: want zstd or nothing", given.Compress)
	}
	rec, have, err := st.LoadConfig()
	if err != nil {
		return cfg, false, nil, err
	}
	for _, p := range []*string{&given.Graph, &given.Train} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return cfg, false, nil, err
			}
		}
	}
	var recorded *epoch.StateConfig
	if have {
		recorded = &rec
	}
	cfg, err = epoch.MergeStateConfig(recorded, given, set)
	var conflict *epoch.ConflictError
	var missing *epoch.MissingError
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

// loadStateConfig reads an existing state directory's configuration; a
// directory without one is an error that says what to run first.
func loadStateConfig(st epoch.State) (epoch.StateConfig, error) {
	cfg, ok, err := st.LoadConfig()
	if err != nil {
		return cfg, err
	}
	if !ok {
		return cfg, fmt.Errorf("%s is not a state directory (no %s): run prepare first", st.Dir, epoch.ConfigName)
	}
	return cfg, nil
}

// checkStateGraph checks the graph a state directory records against its
// fingerprint.
func checkStateGraph(st epoch.State, cfg epoch.StateConfig) error {
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
