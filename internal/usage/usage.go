// Package usage marks errors in a command line, so that chunkify and
// streamsampler exit with status 2 for every one of them — an unknown
// command or flag, a malformed or out-of-range value, a missing required
// flag or argument — and with status 1 for a failure (docs/SAMPLER.md §5).
//
// The commands return Error (or Errorf) for the checks they make
// themselves; Guard makes the checks cobra makes before a command runs
// return Error too; ExitStatus maps the error Execute returned to the
// exit status.
package usage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Error marks an error in the command line itself (exit status 2).
type Error struct{ Err error }

func (e Error) Error() string { return e.Err.Error() }

// Unwrap returns the error that was found in the command line.
func (e Error) Unwrap() error { return e.Err }

// Errorf formats an Error.
func Errorf(format string, a ...any) error { return Error{fmt.Errorf(format, a...)} }

// Is reports whether err, or an error it wraps, is an Error.
func Is(err error) bool {
	var e Error
	return errors.As(err, &e)
}

// Guard makes the command-line checks cobra and pflag make for every
// command of root's tree return Error: flag parsing (unknown flag, a value
// that does not parse), positional argument checks (Args) and required
// flags. Call it once the tree is complete. It wraps each command's Args
// and PreRunE (required flags are checked in the latter, before cobra's
// own check, to name the missing flag as it is typed: "--state is
// required").
func Guard(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Error{err} })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return Error{err}
				}
				return nil
			}
		}
		if c.Runnable() {
			pre, preE := c.PreRun, c.PreRunE
			c.PreRunE = func(cmd *cobra.Command, a []string) error {
				if err := checkRequired(cmd); err != nil {
					return err
				}
				if preE != nil {
					return preE(cmd, a)
				}
				if pre != nil {
					pre(cmd, a)
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// checkRequired returns an Error naming the required flags (MarkFlagRequired)
// that cmd's command line lacks, and one for a violated flag group.
func checkRequired(cmd *cobra.Command) error {
	var missing []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if req := f.Annotations[cobra.BashCompOneRequiredFlag]; len(req) > 0 && req[0] == "true" && !f.Changed {
			missing = append(missing, "--"+f.Name)
		}
	})
	switch len(missing) {
	case 0:
	case 1:
		return Errorf("%s is required", missing[0])
	default:
		return Errorf("%s are required", strings.Join(missing, ", "))
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return Error{err}
	}
	return nil
}

// ExitStatus is the exit status for the error root.Execute returned on
// args: 0 for none, 2 for a command-line error, 1 for any other failure.
// An unknown subcommand of the root is found by cobra before any hook
// runs, so it is recognised here, by finding the command again.
func ExitStatus(root *cobra.Command, args []string, err error) int {
	switch {
	case err == nil:
		return 0
	case Is(err):
		return 2
	}
	if _, _, ferr := root.Find(args); ferr != nil {
		return 2
	}
	return 1
}
