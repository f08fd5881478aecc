//go:build linux

package hugepages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// smapsField returns field (e.g. "THPeligible") of the /proc/self/smaps
// entry whose range holds addr.
func smapsField(t *testing.T, addr uintptr, field string) (string, bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		// An entry starts with its range, "lo-hi perms offset dev inode [path]".
		if lo, hi, ok := strings.Cut(strings.Fields(line + " x")[0], "-"); ok {
			a, e1 := strconv.ParseUint(lo, 16, 64)
			b, e2 := strconv.ParseUint(hi, 16, 64)
			if e1 == nil && e2 == nil {
				in = uint64(addr) >= a && uint64(addr) < b
				continue
			}
		}
		if in && strings.HasPrefix(line, field+":") {
			return strings.TrimSpace(strings.TrimPrefix(line, field+":")), true
		}
	}
	return "", false
}

// TestAdvise: the pages of a large slice given to Advise are eligible for
// transparent huge pages (where the kernel offers them at all); a small
// slice is left alone, and empty and nil ones are no-ops.
func TestAdvise(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages unavailable (%q, %v)", mode, err)
	}
	Advise([]uint64(nil))
	Advise(make([]byte, 0))
	s := make([]uint64, 4*MinBytes/8)
	Advise(s)
	for i := 0; i < len(s); i += 512 {
		s[i] = 1
	}
	mid := uintptr(unsafe.Pointer(&s[len(s)/2]))
	v, ok := smapsField(t, mid, "THPeligible")
	if !ok {
		t.Skip("smaps has no THPeligible field")
	}
	if v != "1" {
		t.Fatalf("THPeligible %q for an advised slice (THP mode %q)", v, strings.TrimSpace(string(mode)))
	}
}
