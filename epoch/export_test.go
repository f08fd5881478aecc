package epoch

// What the external tests (package epoch_test, which may import
// epochtest) reach inside the package for.

var (
	Search       = search
	CountValid   = countValid
	NextBitmap   = nextBitmap
	NextRadix    = nextRadix
	NextSort     = nextSort
	HavePrefetch = havePrefetch
)

// SetPrefetch turns the assembler's software prefetches on or off and
// returns what restores the previous setting.
func SetPrefetch(on bool) (restore func()) {
	old := usePrefetch
	usePrefetch = on
	return func() { usePrefetch = old }
}

// SetLookup forces the row lookup (mergeRatio) and relabel (sortRelabelMin)
// thresholds and returns what restores the previous ones.
func SetLookup(merge, sortMin int) (restore func()) {
	m, s := mergeRatio, sortRelabelMin
	mergeRatio, sortRelabelMin = merge, sortMin
	return func() { mergeRatio, sortRelabelMin = m, s }
}

// SetBatchMaxNodes lowers the most nodes a minibatch may have in the
// batch table and returns what restores it.
func SetBatchMaxNodes(n int) (restore func()) {
	old := batchMaxNodes
	batchMaxNodes = n
	return func() { batchMaxNodes = old }
}

// IndexBytes is the size of the assembler's index (0 without one).
func (a *Assembler) IndexBytes() int64 {
	if a.ix == nil {
		return 0
	}
	return a.ix.Bytes()
}
