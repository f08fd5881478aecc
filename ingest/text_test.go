package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// TestTextSourceBlocks reads random inputs through the parallel block
// reader with blocks of a few dozen bytes, so that nearly every block
// boundary falls somewhere new, and checks what it delivers against
// parseTextOracle run over the whole input at once: the same edges in
// the same order, or, at a defect, a prefix of them and an error naming
// the file, the defect's 1-based line and the oracle's message and kind.
func TestTextSourceBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	id := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Uint64N(10)
		case 1:
			return rng.Uint64N(10_000_000)
		case 2:
			return rng.Uint64N(chunkfmt.MaxNodes)
		}
		return rng.Uint64N(100_000)
	}
	good := []func() string{
		func() string { return fmt.Sprintf("%d\t%d\n", id(), id()) },
		func() string { return fmt.Sprintf("%d %d\n", id(), id()) },
		func() string { return fmt.Sprintf("%d,%d\r\n", id(), id()) },
		func() string { return fmt.Sprintf("  %d , %d \t\n", id(), id()) },
		func() string { return fmt.Sprintf("%08d %d\n", id(), id()) },
		func() string { return "# a comment\n" },
		func() string { return "% another\r\n" },
		func() string { return "\n" },
		func() string { return " \t\r\n" },
	}
	bad := []string{"1 x\n", "1 2 3\n", "-4 5\n", "7\n", "2147483647 1\n", "1 99999999999999999999\n", "1 2\r3 4\n", "1;2\n"}
	for trial := range 400 {
		var sb strings.Builder
		if rng.IntN(5) == 0 {
			sb.WriteString("src,dst\n")
		}
		n := rng.IntN(300)
		defect := -1
		if rng.IntN(3) == 0 {
			defect = rng.IntN(n + 1)
		}
		for i := 0; i <= n; i++ {
			if i == defect {
				sb.WriteString(bad[rng.IntN(len(bad))])
			}
			if i < n {
				sb.WriteString(good[rng.IntN(len(good))]())
			}
		}
		data := []byte(sb.String())
		if rng.IntN(4) == 0 {
			data = bytes.TrimRight(data, "\r\n")
		}
		want := parseTextOracle(data, make([]uint32, len(data)/2+2), chunkfmt.MaxNodes, false, true)
		for _, block := range []int{48, 61, 200, 4096} {
			src := newTextSourceSize(bytes.NewReader(data), "t.txt", chunkfmt.MaxNodes, false, block)
			var got []uint32
			var err error
			for {
				var p []uint32
				if p, err = src.Next(); err != nil {
					break
				}
				got = append(got, p...)
			}
			src.Close()
			where := fmt.Sprintf("trial %d, %d-byte blocks", trial, block)
			if want.errMsg == "" {
				if err != io.EOF || !equalU32(got, want.pairs) {
					t.Fatalf("%s: %d edges, %v; want %d edges", where, len(got)/2, err, len(want.pairs)/2)
				}
				continue
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.File != "t.txt" || ie.Line != want.errLine+1 || ie.Msg != want.errMsg || !errors.Is(err, want.errKind) {
				t.Fatalf("%s: error %v; want line %d: %s", where, err, want.errLine+1, want.errMsg)
			}
			if len(got) > len(want.pairs) || !equalU32(got, want.pairs[:len(got)]) {
				t.Fatalf("%s: the %d edges before the defect differ", where, len(got)/2)
			}
		}
	}
}
