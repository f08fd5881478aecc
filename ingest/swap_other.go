//go:build !linux

package ingest

func exchange(a, b string) error { return errExchangeUnsupported }
