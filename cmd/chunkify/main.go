// Command chunkify packs edge lists into chunked CSR graph directories,
// inspects and verifies them, and generates R-MAT graphs for benchmarks.
//
//	chunkify scan INPUT... [--json]     (check that edge lists parse)
//	chunkify build INPUT... -o DIR [options]
//	chunkify features FEATURES -o DIR [--labels LABELS] [--dim N --dtype T]
//	chunkify info DIR [--json]         (or --graph DIR)
//	chunkify verify DIR [-q]           (or --graph DIR)
//	chunkify generate rmat --scale S --edge-factor F --seed N -o FILE
//
// Exit status: 0 on success, 1 for a failure, 2 for a bad command line.
//
// The work is done by package ingest (parsing, the out-of-core build,
// feature packing, R-MAT) and packages chunkfmt and featstore (the
// formats); this command parses flags, calls them and prints.
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

	"github.com/streamsampler/streamsampler/internal/usage"
)

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs chunkify with args and returns the exit status: 0, 1 for a
// failure, 2 for a bad command line (usage.ExitStatus). SIGINT and
// SIGTERM cancel the running operation, which removes what it had begun
// to write.
func execute(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "chunkify: %v\n", err)
	}
	return usage.ExitStatus(root, args, err)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "chunkify",
		Short: "Pack edge lists into chunked CSR graphs for out-of-core neighbor sampling",
		Long: `chunkify packs edge lists into chunked CSR graph directories (docs/FORMAT.md),
packs node features and labels beside them, describes and verifies them,
and generates R-MAT graphs for benchmarks.

Exit status: 0 on success, 1 for a failure, 2 for a bad command line.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newBuildCmd(), newScanCmd(), newFeaturesCmd(), newInfoCmd(), newVerifyCmd(), newExportCmd(), newGenerateCmd())
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
	usage.Guard(root)
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
