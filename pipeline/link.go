package pipeline

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/streamsampler/streamsampler/epoch"
)

// LinkInfo is epoch_info's "link" object in link mode.
type LinkInfo struct {
	Mode          string  `json:"mode"` // none, binary, triplet
	Amount        float64 `json:"amount"`
	NumTrainEdges int     `json:"num_train_edges"`
	Exclude       string  `json:"exclude"`
	Labels        string  `json:"labels"` // none, f32, i64: edge_label's dtype
	DegreeWeight  bool    `json:"degree_weighted"`
}

// linkInfo describes c's link mode, or nil.
func (c Config) linkInfo() *LinkInfo {
	l := c.Link
	if l == nil {
		return nil
	}
	labels := "none"
	switch {
	case l.Edges.LabelsF32 != nil:
		labels = "f32"
	case l.Edges.LabelsI64 != nil:
		labels = "i64"
	}
	return &LinkInfo{Mode: l.Neg.String(), Amount: l.Amount, NumTrainEdges: l.Edges.Len(), Exclude: l.Exclude.String(), Labels: labels, DegreeWeight: l.Indptr != nil}
}

// numTrain is the count minibatches are cut from: distinct training
// nodes, or in link mode training edges.
func (c Config) numTrain() int {
	if c.Link != nil {
		return c.Link.Edges.Len()
	}
	return c.NumTrain()
}

// linkMeta cuts link epoch e into this rank's minibatches: the training
// edges' positions sharded as nodes are (epoch.LinkShard), shuffled and
// cut as Minibatches cuts nodes, and each minibatch's negatives and seeds
// drawn (epoch.Link.Batch). It returns them and the epoch's frontier_0,
// the union of their seeds.
func (c Config) linkMeta(e uint32) (meta, []uint32) {
	shard, err := epoch.LinkShard(c.Link.Edges.Len(), c.Rank, c.WorldSize(), c.Seed, e)
	if err != nil {
		panic(fmt.Sprintf("pipeline: link shard without Check: %v", err))
	}
	m := meta{shard: len(shard)}
	var ids [][]uint32
	ids, m.dropped = c.Minibatches(shard, e)
	m.links = make([]*epoch.LinkBatch, len(ids))
	m.batches = make([][]uint32, len(ids))
	// The minibatches are independent: one goroutine a core draws them
	// (a scale-22 epoch has 12 500 of them).
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
				m.links[i] = c.Link.Batch(ids[i], c.Seed, e)
				m.batches[i] = m.links[i].Seeds
			}
		}()
	}
	wg.Wait()
	return m, epoch.LinkSeeds(m.links)
}

// epochSeeds returns epoch e's frontier_0 and minibatches: the shard's
// nodes, or in link mode the link minibatches' seeds.
func (p *Pipeline) epochSeeds(e uint32) ([]uint32, meta) {
	if p.cfg.Link != nil {
		m, seeds := p.cfg.linkMeta(e)
		return seeds, m
	}
	seeds := p.cfg.Seeds(e)
	return seeds, p.batchesOf(seeds, e)
}

// assembleClaim assembles claimed minibatch i of its epoch: a node
// minibatch, or a link one with its exclusions (Minibatch.Link).
func (p *Pipeline) assembleClaim(c Claim, sem epoch.Semantics) (*epoch.Blocks, *epoch.LinkFields, error) {
	if c.slot.links == nil {
		b, err := p.store.AssembleAt(c.Epoch, c.slot.batches[c.Index], sem)
		return b, nil, err
	}
	lb := c.slot.links[c.Index]
	r, err := p.store.at(c.Epoch)
	if err != nil {
		return nil, nil, err
	}
	var b *epoch.Blocks
	p.store.withAssembler(r, func(a *epoch.Assembler) { b, err = a.AssembleLink(lb, sem) })
	if err != nil {
		return nil, nil, err
	}
	return b, &lb.Fields, nil
}

// nodeSetOfClaim is the node set of a claimed minibatch under sem (with
// a link minibatch's exclusions).
func (p *Pipeline) nodeSetOfClaim(c Claim, sem epoch.Semantics) ([]uint32, error) {
	if c.slot.links == nil {
		return p.store.NodeSetAt(c.Epoch, c.slot.batches[c.Index], sem)
	}
	r, err := p.store.at(c.Epoch)
	if err != nil {
		return nil, err
	}
	var nodes []uint32
	p.store.withAssembler(r, func(a *epoch.Assembler) { nodes, err = a.NodeSetLink(c.slot.links[c.Index], sem, nil) })
	return nodes, err
}

// LinkMinibatches returns link epoch e's minibatches of this rank and the
// epoch's frontier_0 (what the pipeline serves; for tests and tools that
// check a served epoch against its definition). c must be a link
// configuration that passed Check.
func (c Config) LinkMinibatches(e uint32) ([]*epoch.LinkBatch, []uint32) {
	m, seeds := c.linkMeta(e)
	return m.links, seeds
}
