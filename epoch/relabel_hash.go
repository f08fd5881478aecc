package epoch

// localTable is the relabelling strategy for small hops without a dense
// index: it maps global node ids to local ones for one hop, by open
// addressing with linear probing over packed slots (one cache line per
// probe), emptied in O(1) by bumping a generation stamp instead of
// clearing the slots. Zero-layer minibatches use it to check their seeds.
type localTable struct {
	slots  []slot
	gen    uint32
	shift  uint
	n      int
	limit  int
	expect int // the hop's most nodes, which begin sizes the table for
}

// begin empties the table and inserts dst.
func (t *localTable) begin(h int, dst []uint32) (int, bool) {
	t.reset(t.expect)
	for i, v := range dst {
		if _, fresh := t.insert(v, int32(i)); !fresh {
			return i, true
		}
	}
	return -1, false
}

// relabel (see relabeler) inserts each node with the next local id.
func (t *localTable) relabel(src, sampled []uint32, edgeSrc []int32) ([]uint32, int) {
	for j, v := range sampled {
		loc, fresh := t.insert(v, int32(len(src)))
		if fresh {
			src = append(src, v)
		}
		edgeSrc[j] = loc
	}
	return src, -1
}

type slot struct {
	key, gen uint32
	val      int32
}

// reset empties the table, sized for about expect keys. The slots keep
// their largest capacity; a hop with few nodes uses a prefix of them, so
// that its probes stay in cache.
func (t *localTable) reset(expect int) {
	size := 16
	for size < expect+expect/2 && size < 1<<30 {
		size <<= 1
	}
	if size > cap(t.slots) {
		t.alloc(size)
	} else {
		t.gen++
		if t.gen == 0 { // wrapped: stale stamps could look current
			clear(t.slots[:cap(t.slots)])
			t.gen = 1
		}
		t.slots = t.slots[:size]
		t.shift = uint(64 - log2(size))
		t.limit = size / 4 * 3
	}
	t.n = 0
}

func (t *localTable) alloc(size int) {
	t.slots = make([]slot, size)
	t.gen = 1
	t.shift = uint(64 - log2(size))
	t.limit = size / 4 * 3
}

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// insert returns the value stored under key, or stores v and returns it
// with fresh set.
func (t *localTable) insert(key uint32, v int32) (int32, bool) {
	if t.n >= t.limit {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	i := (uint64(key) * 0x9E3779B97F4A7C15) >> t.shift
	for {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = slot{key: key, gen: t.gen, val: v}
			t.n++
			return v, true
		}
		if s.key == key {
			return s.val, false
		}
		i = (i + 1) & mask
	}
}

func (t *localTable) grow() {
	old, gen := t.slots, t.gen
	t.alloc(2 * len(old))
	t.n = 0
	for _, s := range old {
		if s.gen == gen {
			t.insert(s.key, s.val)
		}
	}
}
