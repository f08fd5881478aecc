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

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/statedir"
)

// flagName is the command-line flag of a StateConfig field.
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// planState opens the state directory for a command that writes epochs
// (statedir.State.PlanWrite) with its flags given (set reports which),
// and says an error about them in terms of the flags.
func planState(st statedir.State, given statedir.Config, set func(field string) bool) (*statedir.Plan, error) {
	if set(statedir.FieldCompress) {
		if err := checkCompress(given.Compress); err != nil {
			return nil, err
		}
	}
	p, err := st.PlanWrite(given, set)
	if err != nil {
		return nil, stateFlagError(st, err)
	}
	return p, nil
}

// checkCompress checks --compress.
func checkCompress(s string) error {
	if s != "" && s != "zstd" {
		return usagef("--compress %q: want zstd or nothing", s)
	}
	return nil
}

// stateFlagError says an error about a state directory's configuration
// (statedir.MergeConfig's, as Reconcile returns it) in terms of the
// command's flags, a usage error; other errors are returned as they are.
func stateFlagError(st statedir.State, err error) error {
	var conflict *statedir.ConflictError
	var missing *statedir.MissingError
	switch {
	case errors.As(err, &conflict):
		return usagef("--%s %v conflicts with %v recorded in %s; use a new state directory",
			flagName(conflict.Field), flagValue(conflict.Given), flagValue(conflict.Recorded), st.ConfigPath())
	case errors.As(err, &missing):
		return usagef("--%s is required on the first prepare of %s", flagName(missing.Field), st.Dir)
	case errors.Is(err, epoch.ErrConfig):
		return usageError{err}
	}
	return err
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

// reportRemoved says what Clean removed, one line each.
func reportRemoved(w io.Writer, st statedir.State, l statedir.Leftover) {
	fmt.Fprintf(w, "removed %s: %s\n", filepath.Join(st.Dir, l.Name), l.Why)
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
