package featplan

import "fmt"

// LRUMisses is the number of rows a least-recently-used cache of cacheRows
// rows reads from disk when serving batches in order, under the same rules
// as Plan (a minibatch's hits are taken when it starts; its misses are then
// admitted, each evicting the least recently used row). It is the baseline
// the plan is compared with.
func LRUMisses(batches [][]uint32, numNodes uint32, cacheRows int) (int64, error) {
	if cacheRows < 0 {
		return 0, fmt.Errorf("%w: cache of %d rows", ErrInput, cacheRows)
	}
	slotOf := make([]int32, numNodes)
	for i := range slotOf {
		slotOf[i] = -1
	}
	// A circular doubly linked list through the slots, in recency order;
	// head is the most recent.
	node := make([]uint32, cacheRows)
	next := make([]int32, cacheRows)
	prev := make([]int32, cacheRows)
	head, used := int32(-1), 0
	unlink := func(s int32) {
		if next[s] == s {
			head = -1
			return
		}
		next[prev[s]], prev[next[s]] = next[s], prev[s]
		if head == s {
			head = next[s]
		}
	}
	pushFront := func(s int32) {
		if head < 0 {
			next[s], prev[s] = s, s
		} else {
			t := prev[head]
			next[s], prev[s] = head, t
			next[t], prev[head] = s, s
		}
		head = s
	}
	var misses int64
	var hit []bool
	for b, nid := range batches {
		hit = append(hit[:0], make([]bool, len(nid))...)
		for i, v := range nid {
			if v >= numNodes {
				return 0, errOutside(b, i, v, uint64(numNodes))
			}
			if s := slotOf[v]; s >= 0 {
				hit[i] = true
				unlink(s)
				pushFront(s)
			}
		}
		for i, v := range nid {
			if hit[i] {
				continue
			}
			misses++
			if cacheRows == 0 {
				continue
			}
			var s int32
			if used < cacheRows {
				s = int32(used)
				used++
			} else {
				s = prev[head] // least recent
				unlink(s)
				slotOf[node[s]] = -1
			}
			node[s] = v
			slotOf[v] = s
			pushFront(s)
		}
	}
	return misses, nil
}
