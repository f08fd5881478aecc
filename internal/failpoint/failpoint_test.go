package failpoint

import (
	"errors"
	"testing"
)

func TestHitAndEnable(t *testing.T) {
	if err := Hit("a"); err != nil {
		t.Fatalf("Hit with nothing enabled: %v", err)
	}
	boom := errors.New("boom")
	var seen []string
	restore := Enable(func(name string) error {
		seen = append(seen, name)
		if name == "b" {
			return boom
		}
		return nil
	})
	if err := Hit("a"); err != nil {
		t.Fatalf("Hit(a): %v", err)
	}
	if err := Hit("b"); !errors.Is(err, boom) {
		t.Fatalf("Hit(b) = %v, want boom", err)
	}
	inner := Enable(func(string) error { return nil })
	if err := Hit("b"); err != nil {
		t.Fatalf("inner hook: %v", err)
	}
	inner()
	if err := Hit("b"); !errors.Is(err, boom) {
		t.Fatalf("after the inner restore: %v, want boom", err)
	}
	restore()
	if err := Hit("b"); err != nil {
		t.Fatalf("after restore: %v", err)
	}
	if len(seen) != 3 {
		t.Fatalf("hook saw %v, want a, b, b", seen)
	}
}
