package serve

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// A split table registers a split once per key (however many ask at
// once), holds each one's bytes of the budget until it is dropped, and
// refuses splits past MaxSplits or past a quarter of the budget; a split
// whose making fails holds nothing.
func TestSplitTable(t *testing.T) {
	b := newBudget(4 << 20)
	var tab splitTable[int, *int]
	ctx := context.Background()
	mk := func(v int) func() (*int, error) {
		return func() (*int, error) { return &v, nil }
	}
	// Eight requests for the same key at once: one split, one id, its
	// bytes held once.
	var wg sync.WaitGroup
	ids := make([]uint32, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, v, err := tab.add(ctx, b, nil, 7, 1000, "7 nodes", mk(70), nil)
			if err != nil || *v != 70 {
				t.Errorf("add: %v %v", v, err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("ids %v: one key, one id", ids)
		}
	}
	if used, _ := b.inUse(); used != 1000 || tab.heldBytes() != 1000 {
		t.Fatalf("budget in use %d, table holds %d; want 1000 each", used, tab.heldBytes())
	}
	// Past a quarter of the budget.
	if _, _, err := tab.add(ctx, b, nil, 8, 1<<20, "lots of nodes", mk(80), nil); !isCode(err, CodeOverBudget) || !strings.Contains(err.Error(), "lots of nodes may keep 1048576 bytes") {
		t.Fatalf("over the share: %v", err)
	}
	// A split that cannot be made holds nothing.
	boom := errors.New("boom")
	if _, _, err := tab.add(ctx, b, nil, 9, 10, "9 nodes", func() (*int, error) { return nil, boom }, nil); !isCode(err, CodeBadRequest) {
		t.Fatalf("failing split: %v", err)
	}
	// MaxSplits, counting the one registered.
	registered := 1
	for k := 100; registered < MaxSplits; k++ {
		if _, _, err := tab.add(ctx, b, nil, k, 10, "a few nodes", mk(k), func(*int) { registered++ }); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := tab.add(ctx, b, nil, 99999, 10, "one more", mk(0), nil); !isCode(err, CodeOverBudget) {
		t.Fatalf("split %d: %v", MaxSplits+1, err)
	}
	// Dropping gives the bytes back and forgets the id for good.
	if err := tab.drop(ids[0], b); err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.get(ids[0]); ok {
		t.Fatal("a dropped split is still found")
	}
	if err := tab.drop(ids[0], b); !isCode(err, CodeUnknownSplit) {
		t.Fatalf("dropped twice: %v", err)
	}
	if used, _ := b.inUse(); used != int64(10*(MaxSplits-1)) || tab.heldBytes() != used {
		t.Fatalf("budget in use %d, table %d, want %d", used, tab.heldBytes(), 10*(MaxSplits-1))
	}
	if id, _, err := tab.add(ctx, b, nil, 7, 1000, "7 nodes", mk(70), nil); err != nil || id == ids[0] {
		t.Fatalf("the dropped key again: id %d (the dropped one was %d), %v; ids are not reused", id, ids[0], err)
	}
}

func isCode(err error, code uint16) bool {
	var re *requestError
	return errors.As(err, &re) && re.code == code
}
