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
	"strings"

	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// ErrNotPrepared is returned by State.Advance and Store.Advance when no
// later epoch has been prepared.
var ErrNotPrepared = errors.New("statedir: next epoch not prepared")

// ErrBusy is wrapped by State.Lock while another process holds the
// state directory.
var ErrBusy = errors.New("epoch: state directory in use by another process")

// ErrPrune is wrapped by State.Advance when the new epoch is current but
// deleting the older ones failed: the switch has happened.
var ErrPrune = errors.New("epoch: deleting older epochs")

// State file names inside a state directory.
const (
	CurrentName = "CURRENT"
	ConfigName  = "config.json"
)

// State is a state directory: config.json (the run's configuration),
// epoch-N directories written by Write, and CURRENT naming the epoch that
// minibatches are served from. Every file is replaced atomically, so a
// crash leaves either the old or the new state; Open checks that the
// parts agree and finds what an interrupted run left. A State is a value;
// its methods do not lock: a command that changes the directory holds
// Lock.
type State struct{ Dir string }

// Init creates the state directory if needed.
func (s State) Init() error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("epoch: state: %w", err)
	}
	return nil
}

// EpochDir returns the directory of epoch n.
func (s State) EpochDir(n uint32) string {
	return filepath.Join(s.Dir, epochdir.DirName(n))
}

// Prepared returns, ascending, the epochs that have a complete directory
// (one holding a manifest; Write makes the directory visible only then).
func (s State) Prepared() ([]uint32, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("epoch: state: %w", err)
	}
	var out []uint32
	for _, e := range ents {
		n, ok := epochdir.ParseDirName(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.Dir, e.Name(), epochdir.ManifestName)); err != nil {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// current is CURRENT: the epoch and a checksum over it, so that a flipped
// digit does not serve another prepared epoch.
type current struct {
	Epoch    uint32 `json:"epoch"`
	Checksum uint32 `json:"checksum"`
}

func (c current) checksum() uint32 {
	c.Checksum = 0
	return crc32c.OfJSON(c)
}

// Current returns the epoch named by CURRENT; ok is false when there is
// none yet. A damaged CURRENT wraps ErrCorrupt.
func (s State) Current() (n uint32, ok bool, err error) {
	path := filepath.Join(s.Dir, CurrentName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("epoch: state: %w", err)
	}
	var c current
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return 0, false, fmt.Errorf("%w: %s: %q is not {\"epoch\":N,\"checksum\":C}", epochdir.ErrCorrupt, path, strings.TrimSpace(string(data)))
	}
	if got := c.checksum(); got != c.Checksum {
		return 0, false, fmt.Errorf("%w: %s: checksum %#08x does not match epoch %d (%#08x): edited or damaged", epochdir.ErrCorrupt, path, c.Checksum, c.Epoch, got)
	}
	return c.Epoch, true, nil
}

// SetCurrent makes epoch n current (atomically), without checking that it
// is prepared and without pruning.
func (s State) SetCurrent(n uint32) error {
	c := current{Epoch: n}
	c.Checksum = c.checksum()
	data, _ := json.Marshal(c)
	path := filepath.Join(s.Dir, CurrentName)
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("epoch: state: %w", err)
	}
	return nil
}

// Advance makes the oldest prepared epoch after the current one current
// (any prepared epoch if none is current yet) and then deletes the epochs
// older than it, with any temporary directories they left. It returns the
// new current epoch, or ErrNotPrepared. A failure to delete is returned
// with the new epoch, wrapping ErrPrune.
func (s State) Advance() (uint32, error) {
	cur, ok, err := s.Current()
	if err != nil {
		return 0, err
	}
	prep, err := s.Prepared()
	if err != nil {
		return 0, err
	}
	i := 0
	if ok {
		i, _ = slices.BinarySearch(prep, cur+1)
		if cur == ^uint32(0) {
			i = len(prep)
		}
	}
	if i == len(prep) {
		if ok {
			return 0, fmt.Errorf("%w: no epoch after %d in %s", ErrNotPrepared, cur, s.Dir)
		}
		return 0, fmt.Errorf("%w: no epoch in %s", ErrNotPrepared, s.Dir)
	}
	next := prep[i]
	if err := s.SetCurrent(next); err != nil {
		return 0, err
	}
	return next, s.Prune(next)
}

// Prune removes epoch directories (and temporary ones of Write) for
// epochs below keep.
func (s State) Prune(keep uint32) error {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return fmt.Errorf("epoch: state: %w", err)
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if tmp, ok := strings.CutPrefix(name, "."); ok {
			// .epoch-N.tmp-XXXX (and .old) from an interrupted Write.
			if base, _, found := strings.Cut(tmp, ".tmp-"); found {
				name = base
			}
		}
		n, ok := epochdir.ParseDirName(name)
		if !ok || n >= keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrPrune, err)
	}
	return nil
}
