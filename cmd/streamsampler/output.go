package main

import (
	"os"
	"path/filepath"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/statedir"
)

// checkOutput refuses an output path (walk -o, sample -o) inside a graph
// directory or a state directory, at any depth: the file written there
// would replace what the commands read (walk --graph g -o g/edges.chunks
// destroyed the graph). A destination that is not a regular file is
// atomicfile.Create's to refuse.
func checkOutput(flag, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for d := dir; ; d = filepath.Dir(d) {
		if kind := dataDir(d); kind != "" {
			return usagef("%s %s: that is inside %s %s, whose files the commands read; write it elsewhere", flag, path, kind, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// dataDir names what d is when it is a graph directory (chunkfmt's
// edges.chunks beside its manifest) or a state directory (CURRENT, or
// config.json beside an epoch directory), and is "" otherwise: names as
// common as config.json or manifest.json alone do not make one.
func dataDir(d string) string {
	has := func(name string) bool {
		_, err := os.Lstat(filepath.Join(d, name))
		return err == nil
	}
	switch {
	case has(chunkfmt.ChunksFile) && has(chunkfmt.ManifestFile):
		return "the graph directory"
	case has(statedir.CurrentName):
		return "the state directory"
	case has(statedir.ConfigName):
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if _, ok := epochdir.ParseDirName(e.Name()); ok && e.IsDir() {
				return "the state directory"
			}
		}
	}
	return ""
}
