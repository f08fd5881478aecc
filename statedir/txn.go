package statedir

import (
	"errors"
	"fmt"
	"sync"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// The failpoints of a transaction besides epochdir.Write's (internal/failpoint).
const (
	FailpointLocked      = "statedir/locked"       // holding the lock, leftovers removed
	FailpointWriteConfig = "statedir/write-config" // before a first commit records the configuration
)

// Txn is the one way epochs enter a state directory: prepare, run --state
// and the two-epoch store (pipeline.WithTxn) all commit through it. It
// holds the directory's lock from Begin to Close and owns the commit rule:
// a directory whose configuration is not yet recorded gets config.json
// just before its first epoch, and loses it again (Close) if no epoch was
// committed, so that a failed command leaves nothing new visible and a
// kill at any step leaves the old state or the new one (a config.json
// without an epoch counts as nothing: Open lists it as a leftover).
type Txn struct {
	mu       sync.Mutex // Commit runs in the store's preparing goroutine
	st       State
	cfg      Config
	fresh    bool // no configuration on disk before this transaction
	wrote    bool // this transaction wrote config.json
	commits  int
	contents *Contents
	release  func()
}

// Begin takes st for writing epochs of cfg: it creates the directory if
// need be, takes its lock (ErrBusy if another process holds it), removes
// what interrupted runs left (report, if not nil, sees each removal),
// refuses epochs without a configuration, and checks that the committed
// state is still opened (what the caller read with Open and planned
// from), so that a command never acts on a directory another one changed
// in between. fresh says that cfg is new: opened had no configuration.
func Begin(st State, opened *Contents, cfg Config, fresh bool, report func(Leftover)) (t *Txn, err error) {
	if err := st.Init(); err != nil {
		return nil, err
	}
	release, err := st.Lock()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	c, err := st.Open()
	if err != nil {
		return nil, err
	}
	if err := c.RefuseOrphans(st.Dir); err != nil {
		return nil, err
	}
	removed, err := st.Clean(c)
	if report != nil {
		for _, l := range removed {
			report(l)
		}
	}
	if err != nil {
		return nil, err
	}
	// What is left is the committed state alone.
	if c, err = st.Open(); err != nil {
		return nil, err
	}
	if c.Committed != opened.Committed || c.Config.Checksum != opened.Config.Checksum {
		return nil, fmt.Errorf("%s was changed by another command in the meantime: run it again", st.Dir)
	}
	if err := failpoint.Hit(FailpointLocked); err != nil {
		return nil, err
	}
	return &Txn{st: st, cfg: cfg, fresh: fresh, contents: c, release: release}, nil
}

// Contents is the committed state as Begin found it.
func (t *Txn) Contents() *Contents { return t.contents }

// State is the directory the transaction writes.
func (t *Txn) State() State { return t.st }

// NextEpoch is the epoch a prepare makes by default: the one after the
// newest prepared epoch; with none prepared, the one after the current
// epoch, or 0.
func (t *Txn) NextEpoch() uint32 {
	c := t.contents
	if len(c.Prepared) > 0 {
		return c.Prepared[len(c.Prepared)-1] + 1
	}
	if c.HasCurrent {
		return c.Current + 1
	}
	return 0
}

// Commit writes r as its epoch's directory, with the configuration's
// identity and compression, replacing a stale copy when overwrite is set
// (the two-epoch store re-prepares an epoch a killed run left). The first
// commit of a fresh configuration writes config.json before the epoch;
// the epoch directory's rename is the commit point. A failed Commit is
// rolled back as if it had not been called.
func (t *Txn) Commit(r *epoch.Result, overwrite bool) (err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.release == nil {
		return errors.New("statedir: commit on a closed transaction")
	}
	if t.fresh && !t.wrote {
		if err := failpoint.Hit(FailpointWriteConfig); err != nil {
			return err
		}
		if err := t.st.WriteConfig(t.cfg); err != nil {
			return err
		}
		t.wrote = true
		defer func() {
			if err != nil && t.commits == 0 {
				err = errors.Join(err, t.unwriteConfig())
			}
		}()
	}
	id := t.cfg.Identity()
	if err := epochdir.Write(t.st.EpochDir(r.Key.Epoch), r, epochdir.WriteOptions{Compress: t.cfg.Compress, Overwrite: overwrite, Identity: &id}); err != nil {
		return err
	}
	t.commits++
	return nil
}

// unwriteConfig takes back the config.json this transaction wrote.
func (t *Txn) unwriteConfig() error {
	if !t.wrote {
		return nil
	}
	t.wrote = false
	return t.st.RemoveConfig()
}

// Close ends the transaction: without a committed epoch, the config.json
// it wrote is removed again; then the lock is released. Close is
// idempotent.
func (t *Txn) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.release == nil {
		return nil
	}
	var err error
	if t.commits == 0 {
		err = t.unwriteConfig()
	}
	t.release()
	t.release = nil
	return err
}

// Plan is a state directory as a command that writes epochs into it finds
// it before taking it: what Open read (no orphan epochs), the
// configuration the command's epochs will have (Reconcile: merged with
// the recorded one, the graph's fingerprint taken or checked) and the
// graph's manifest. Nothing is written until Begin.
type Plan struct {
	State    State
	Contents *Contents
	Config   Config
	Fresh    bool // no configuration recorded: Begin's first commit writes Config
	Graph    *chunkfmt.Manifest
}

// PlanWrite opens s for a command giving given (set reports which fields):
// the first half of every epoch writer's sequence (prepare, run --state),
// the second being Plan.Begin once the command has checked the rest of
// its arguments. Its errors about the fields are Reconcile's, for the
// command to name its flags in.
func (s State) PlanWrite(given Config, set func(field string) bool) (*Plan, error) {
	c, err := s.Open()
	if err != nil {
		return nil, err
	}
	if err := c.RefuseOrphans(s.Dir); err != nil {
		return nil, err
	}
	cfg, fresh, m, err := s.Reconcile(c, given, set)
	if err != nil {
		return nil, err
	}
	return &Plan{State: s, Contents: c, Config: cfg, Fresh: fresh, Graph: m}, nil
}

// Begin binds the training nodes train to the plan's configuration (a
// fresh one records their identity; a recorded one refuses a training
// file that changed) and begins the transaction (Begin, report seeing
// each leftover removed).
func (p *Plan) Begin(train []uint32, report func(Leftover)) (*Txn, error) {
	if err := p.Config.BindTrainSet(train, p.Fresh); err != nil {
		return nil, err
	}
	return Begin(p.State, p.Contents, p.Config, p.Fresh, report)
}
