package atomicfile_test

import (
	"bufio"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// A streamed write: the destination changes only at Commit, and the
// deferred Abort removes the temporary on every early return.
func ExampleCreate() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "edges.txt")

	write := func() error {
		f, err := atomicfile.Create(path, 0o644)
		if err != nil {
			return err
		}
		defer f.Abort()
		w := bufio.NewWriter(f)
		for i := range 3 {
			fmt.Fprintf(w, "%d %d\n", i, i+1)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return f.Commit()
	}
	if err := write(); err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// 0 1
	// 1 2
	// 2 3
}
