//go:build !linux

package atomicfile

// exchangeNames reports that no atomic exchange is available here, so
// ReplaceDir renames the old tree aside first.
func exchangeNames(a, b string) error { return errExchangeUnsupported }
