package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// Contents is a state directory as Open found it.
//
// Its commit rule: config.json is written before the first epoch, and an
// epoch becomes visible only by the rename of its finished directory. So
// the directory is committed (Committed) once config.json and at least
// one epoch (or CURRENT) exist; a config.json alone is what a first
// prepare left that never committed its epoch, and counts as nothing.
type Contents struct {
	Config     Config // the committed configuration (when Committed)
	Committed  bool
	Prepared   []uint32 // epochs with a manifest, ascending
	Current    uint32   // the epoch named by CURRENT (when HasCurrent)
	HasCurrent bool
	// Leftovers is what interrupted runs left: nothing in it is part of
	// the committed state. Clean removes it.
	Leftovers []Leftover
}

// Leftover is one entry of a state directory that no committed state
// accounts for.
type Leftover struct {
	Name string // the entry's name in the directory
	Why  string // what it is, for the report
	// Orphan marks an epoch (or CURRENT) without config.json: prepare
	// refuses to adopt one; info and advance remove it.
	Orphan bool
}

// Orphans returns the leftovers that are epochs without a configuration.
func (c *Contents) Orphans() []Leftover {
	var out []Leftover
	for _, l := range c.Leftovers {
		if l.Orphan {
			out = append(out, l)
		}
	}
	return out
}

// RefuseOrphans is the error for a directory dir holding epochs without a
// configuration (nil if none): no command adopts them.
func (c *Contents) RefuseOrphans(dir string) error {
	o := c.Orphans()
	if len(o) == 0 {
		return nil
	}
	names := make([]string, len(o))
	for i, l := range o {
		names[i] = l.Name
	}
	return fmt.Errorf("%s holds %s without %s (left by an interrupted run of an older build, or by hand): not adopted; run info --state %s to remove it, or use a new state directory",
		dir, strings.Join(names, ", "), ConfigName, dir)
}

// Open reads and checks the state directory as a whole: config.json,
// every epoch's manifest and CURRENT, each against its checksum, and
// every epoch's identity, key and fanouts against config.json. A
// directory whose parts disagree is refused with an error (wrapping
// ErrCorrupt) that names the file and the field. What an interrupted run
// left is listed in Leftovers, not refused. A directory that does not
// exist gives empty Contents. Open writes nothing; it does not read the
// epochs' arrays (Read checks those).
func (s State) Open() (*Contents, error) {
	c := &Contents{}
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("epoch: state: %w", err)
	}
	type epochEntry struct {
		n    uint32
		name string
		m    *epochdir.Manifest
		err  error // reading or parsing its manifest
	}
	var epochs []epochEntry
	var haveConfig, haveCurrent bool
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == ConfigName:
			haveConfig = true
		case name == CurrentName:
			haveCurrent = true
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"):
			base, _, _ := strings.Cut(name[1:], ".tmp-")
			if _, isEpoch := epochdir.ParseDirName(base); isEpoch || base == ConfigName || base == CurrentName {
				c.Leftovers = append(c.Leftovers, Leftover{Name: name, Why: "temporary copy of " + base + " from an interrupted write"})
			}
		default:
			n, ok := epochdir.ParseDirName(name)
			if !ok || !e.IsDir() {
				continue
			}
			mpath := filepath.Join(s.Dir, name, epochdir.ManifestName)
			if _, err := os.Lstat(mpath); errors.Is(err, fs.ErrNotExist) {
				c.Leftovers = append(c.Leftovers, Leftover{Name: name, Why: "epoch directory without " + epochdir.ManifestName + " (incomplete)"})
				continue
			}
			m, err := epochdir.ReadManifest(mpath)
			epochs = append(epochs, epochEntry{n: n, name: name, m: m, err: err})
		}
	}
	slices.SortFunc(epochs, func(a, b epochEntry) int { return int(int64(a.n) - int64(b.n)) })

	if !haveConfig {
		for _, e := range epochs {
			c.Leftovers = append(c.Leftovers, Leftover{Name: e.name, Why: "epoch without " + ConfigName + " (not adopted)", Orphan: true})
		}
		if haveCurrent {
			c.Leftovers = append(c.Leftovers, Leftover{Name: CurrentName, Why: "CURRENT without " + ConfigName, Orphan: true})
		}
		return c, nil
	}
	cpath := s.ConfigPath()
	cfg, err := readConfig(cpath)
	if err != nil {
		return nil, err
	}
	if len(epochs) == 0 && !haveCurrent {
		c.Leftovers = append(c.Leftovers, Leftover{Name: ConfigName, Why: "configuration of a first prepare that committed no epoch"})
		return c, nil
	}
	for _, e := range epochs {
		if e.err != nil {
			return nil, e.err
		}
		mpath := filepath.Join(s.Dir, e.name, epochdir.ManifestName)
		if err := e.m.CheckDirName(mpath); err != nil {
			return nil, err
		}
		if err := checkAgainstConfig(e.m, mpath, cfg, cpath); err != nil {
			return nil, err
		}
		if err := e.m.CheckSum(mpath); err != nil {
			return nil, err
		}
		c.Prepared = append(c.Prepared, e.n)
	}
	if got := cfg.checksum(); got != cfg.Checksum {
		return nil, fmt.Errorf("%w: %s: checksum %#08x does not match its content (%#08x): the configuration was edited or damaged; use a new state directory",
			epochdir.ErrCorrupt, cpath, cfg.Checksum, got)
	}
	if haveCurrent {
		cur, _, err := s.Current()
		if err != nil {
			return nil, err
		}
		if _, found := slices.BinarySearch(c.Prepared, cur); !found {
			return nil, fmt.Errorf("%w: %s names epoch %d, but %s is missing", epochdir.ErrCorrupt, filepath.Join(s.Dir, CurrentName), cur, s.EpochDir(cur))
		}
		c.Current, c.HasCurrent = cur, true
		// Epochs older than the current one are what an interrupted
		// advance did not delete.
		i, _ := slices.BinarySearch(c.Prepared, cur)
		for _, n := range c.Prepared[:i] {
			c.Leftovers = append(c.Leftovers, Leftover{Name: filepath.Base(s.EpochDir(n)), Why: "older than the current epoch (an interrupted advance)"})
		}
		c.Prepared = c.Prepared[i:]
	}
	c.Config, c.Committed = cfg, true
	return c, nil
}

// checkAgainstConfig reports the first field in which the epoch manifest
// m (at mpath) disagrees with the configuration cfg (at cpath).
func checkAgainstConfig(m *epochdir.Manifest, mpath string, cfg Config, cpath string) error {
	if m.Identity == nil {
		return fmt.Errorf("%w: %s: no identity (graph, training set, rank), unlike every epoch of a state directory: written by an older build or edited",
			epochdir.ErrCorrupt, mpath)
	}
	comp := "none"
	if cfg.Compress == "zstd" {
		comp = "zstd"
	}
	arrayComp := comp
	for _, a := range m.Arrays {
		if a.Compression != comp {
			arrayComp = a.Compression
			break
		}
	}
	id, want := *m.Identity, cfg.Identity()
	for _, f := range []struct {
		field      string
		same       bool
		got, wants any
	}{
		{"fanouts", slices.Equal(m.Fanouts, cfg.Fanouts), m.Fanouts, cfg.Fanouts},
		{"seed", m.Seed == cfg.Seed, m.Seed, cfg.Seed},
		{"replace", m.Replace == cfg.Replace, m.Replace, cfg.Replace},
		{"edge_ids", m.EdgeIDs == cfg.EdgeIDs, m.EdgeIDs, cfg.EdgeIDs},
		{"graph fingerprint", id.Graph == want.Graph, id.Graph, want.Graph},
		{"train_set", id.Train == want.Train, id.Train, want.Train},
		{"rank", id.Rank == want.Rank, id.Rank, want.Rank},
		{"world_size", id.WorldSize == want.WorldSize, id.WorldSize, want.WorldSize},
		{"compression", arrayComp == comp, arrayComp, comp},
	} {
		if !f.same {
			return fmt.Errorf("%w: %s: %s %v disagrees with %v in %s: the state directory mixes two configurations (or one was edited); use a new state directory",
				epochdir.ErrCorrupt, mpath, f.field, f.got, f.wants, cpath)
		}
	}
	return nil
}

// Clean removes c's leftovers from the directory and returns those it
// removed. The caller holds Lock, so that no running command's temporary
// files are taken.
func (s State) Clean(c *Contents) ([]Leftover, error) {
	var done []Leftover
	var errs []error
	for _, l := range c.Leftovers {
		if err := os.RemoveAll(filepath.Join(s.Dir, l.Name)); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, l)
	}
	if len(done) > 0 {
		if err := atomicfile.SyncDir(s.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("epoch: state: cleaning %s: %w", s.Dir, err)
	}
	return done, nil
}
