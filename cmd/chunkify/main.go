// Command chunkify packs edge lists into chunked CSR graph directories,
// inspects and verifies them, and generates R-MAT graphs for benchmarks.
//
//	chunkify build INPUT... -o DIR [options]
//	chunkify info DIR [--json]
//	chunkify verify DIR
//	chunkify generate rmat --scale S --edge-factor F --seed N -o FILE
//
// The work is done by package ingest (parsing, the out-of-core build,
// R-MAT) and package chunkfmt (the format); this command parses flags,
// calls them and prints.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chunkify: %v\n", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "chunkify",
		Short:         "Pack edge lists into chunked CSR graphs for out-of-core neighbor sampling",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newBuildCmd(), newInfoCmd(), newVerifyCmd(), newGenerateCmd())
	var cpuProfile string
	var stopProfile func()
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		return nil
	}
	root.PersistentPostRun = func(cmd *cobra.Command, args []string) {
		if stopProfile != nil {
			stopProfile()
		}
	}
	return root
}

// stderrTTY returns the command's stderr when it is a terminal file, for
// progress lines; nil otherwise (tests, pipes, --quiet).
func stderrTTY(cmd *cobra.Command, quiet bool) io.Writer {
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && progressEnabled(f, quiet) {
		return f
	}
	return nil
}
