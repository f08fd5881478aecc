package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/internal/usage"
)

// subcommands builds streamsampler's subcommands, in the order of
// docs/SAMPLER.md §5. A new subcommand is a file with its constructor and
// one entry here.
func subcommands() []*cobra.Command {
	return []*cobra.Command{
		newPrepareCmd(),
		newAdvanceCmd(),
		newSampleCmd(),
		newRunCmd(),
		newInfoCmd(),
		newBenchCmd(),
		newServeCmd(),
		newWalkCmd(),
	}
}

// newRootCmd builds a fresh command tree (tests build one per call).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "streamsampler",
		Short: "Out-of-core neighbor sampling: prepare epochs by streaming graph chunks, assemble minibatches",
		Long: `streamsampler samples GNN neighborhoods for a whole epoch at a time by streaming
the chunks of a graph directory (made by chunkify) through a sampling device,
keeps two epochs resident in a state directory, and assembles minibatches
from them. See docs/SAMPLER.md.

Exit status: 0 on success, 1 for a failure, 2 for a bad command line.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(subcommands()...)
	usage.Guard(root)
	return root
}

// execute runs the CLI with args and returns the exit status: 0, 1 for a
// failure, 2 for bad usage. Ctrl-C cancels the running operation cleanly.
func execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "streamsampler: %v\n", err)
	}
	if errors.As(err, new(usageError)) {
		return 2
	}
	return usage.ExitStatus(root, args, err)
}

// usageError marks an error found in the command line by the subcommands'
// own checks (exit status 2, as usage.Error for the checks cobra makes).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }
