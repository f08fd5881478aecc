package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
)

// TestFeaturesLargestLabel: labels up to 2^31−1 (documented valid) pack
// with --force over a good store, and the store that replaced it
// verifies and opens with 2^31 classes. Before, num_classes overflowed to
// −2^31: features exited 0, verify (and serve) refused the store, and
// the good one was gone.
func TestFeaturesLargestLabel(t *testing.T) {
	g := emailGraph(t)
	x, _ := uint8NPY(t, 1005, 2)
	if _, _, err := run(t, "features", x, "-o", g, "-q"); err != nil {
		t.Fatal(err)
	}
	var labels []byte
	for i := range 1005 {
		labels = fmt.Appendf(labels, "%d\n", []int{0, 3, 2147483647}[i%3])
	}
	y := filepath.Join(t.TempDir(), "node-label.csv")
	os.WriteFile(y, labels, 0o644)
	if _, stderr, err := run(t, "features", x, "-o", g, "--labels", y, "--force"); err != nil || !strings.Contains(stderr, "2147483648 classes") {
		t.Fatalf("features: %q, %v", stderr, err)
	}
	stdout, _, err := run(t, "verify", g)
	if err != nil || !strings.Contains(stdout, "labels ok: 1005 labeled, 2147483648 classes") {
		t.Fatalf("verify: %q, %v", stdout, err)
	}
	s, err := featstore.Open(g)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make([]int32, 1)
	if err := s.ReadLabels([]uint32{1004}, got); err != nil || got[0] != 2147483647 {
		t.Fatalf("label of node 1004: %v, %v", got, err)
	}
}
