package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
)

// subcommands are the constructors of streamsampler's subcommands. A new
// subcommand is one line in its own file:
//
//	func init() { register(newServeCmd) }
var subcommands []func() *cobra.Command

// register adds a subcommand constructor; call it from an init function.
func register(f func() *cobra.Command) { subcommands = append(subcommands, f) }

// newRootCmd builds a fresh command tree (tests build one per call).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "streamsampler",
		Short: "Out-of-core neighbor sampling: prepare epochs by streaming graph chunks, assemble minibatches",
		Long: `streamsampler samples GNN neighborhoods for a whole epoch at a time by streaming
the chunks of a graph directory (made by chunkify) through a sampling device,
keeps two epochs resident in a state directory, and assembles minibatches
from them. See docs/SAMPLER.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, f := range subcommands {
		root.AddCommand(f())
	}
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
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "streamsampler: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError marks an error in the command line itself.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }
