//go:build !linux

package featplan

import "os"

// dropFileCache does nothing outside Linux: the buffered figures there
// are of whatever the page cache holds.
func dropFileCache(*os.File) error { return nil }
