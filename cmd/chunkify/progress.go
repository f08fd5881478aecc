package main

import (
	"os"

	"github.com/streamsampler/streamsampler/internal/progress"
)

func progressEnabled(f *os.File, quiet bool) bool { return progress.Enabled(f, quiet) }
