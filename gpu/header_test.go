package gpu

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/streamsampler/streamsampler/walk"
)

// The C header streamsampler_gpu.h is the one definition of what the Go
// package and the library exchange. These tests read it, so they hold in
// builds without cgo too; header_cgo_test.go checks the parts cgo reads.

const headerFile = "streamsampler_gpu.h"

// headerConstants returns the SSG_* enumerators and integer #defines of
// the header with their values.
func headerConstants(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(headerFile)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]int{}
	re := regexp.MustCompile(`(?m)^\s*(?:#define\s+(SSG_\w+)\s+(\d+)|(SSG_\w+)\s*=\s*(\d+)\s*,?)`)
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		name, val := m[1], m[2]
		if name == "" {
			name, val = m[3], m[4]
		}
		v, err := strconv.Atoi(val)
		if err != nil {
			t.Fatalf("%s: %s = %q: %v", headerFile, name, val, err)
		}
		if _, dup := consts[name]; dup {
			t.Fatalf("%s: %s defined twice", headerFile, name)
		}
		consts[name] = v
	}
	if len(consts) == 0 {
		t.Fatalf("%s: no SSG_* constants found", headerFile)
	}
	return consts
}

func TestModesMatchHeader(t *testing.T) {
	h := headerConstants(t)
	for _, c := range []struct {
		name, goName string
		mode         Mode
	}{{"SSG_MODE_FUSED", "Fused", Fused}, {"SSG_MODE_BSP", "BSP", BSP}} {
		v, ok := h[c.name]
		if !ok {
			t.Errorf("%s does not define %s", headerFile, c.name)
		} else if int(c.mode) != v {
			t.Errorf("%s = %d in %s, but gpu.%s = %d", c.name, v, headerFile, c.goName, int(c.mode))
		}
	}
}

// TestWalkModesMatchHeader ties ssg_walk's SSG_WALK_* to walk.Mode,
// which Backend.WalksInto passes as the mode number.
func TestWalkModesMatchHeader(t *testing.T) {
	h := headerConstants(t)
	for _, c := range []struct {
		name string
		mode walk.Mode
	}{{"SSG_WALK_DEEPWALK", walk.DeepWalk}, {"SSG_WALK_PPR", walk.PPR}, {"SSG_WALK_NODE2VEC", walk.Node2Vec}} {
		if v, ok := h[c.name]; !ok || v != int(c.mode) {
			t.Errorf("%s = %d (defined: %v) in %s, but walk.Mode %s = %d", c.name, v, ok, headerFile, c.mode, int(c.mode))
		}
	}
}
