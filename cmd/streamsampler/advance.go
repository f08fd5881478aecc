package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/streamsampler/streamsampler/statedir"
)

func newAdvanceCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "advance --state STATEDIR",
		Short: "Make the next prepared epoch current and delete older ones",
		Long: `advance makes the next prepared epoch current and deletes the older ones.
It first checks the whole state directory (refusing one whose parts disagree)
and removes, naming each on stderr, what interrupted runs left there.`,
		Example: `  streamsampler advance --state st`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := statedir.State{Dir: state}
			if err := requireDir(st); err != nil {
				return err
			}
			// What interrupted runs left is removed first, and said.
			c, unlock, err := st.OpenLocked(func(l statedir.Leftover) { reportRemoved(cmd.ErrOrStderr(), st, l) })
			if err != nil {
				return err
			}
			defer unlock()
			if !c.Committed {
				return notStateDir(st)
			}
			n, err := st.Advance()
			switch {
			case errors.Is(err, statedir.ErrPrune):
				// The switch happened: the exit status says so, and the
				// next advance or info removes what is left.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
			case err != nil:
				return fmt.Errorf("advance %s: %w (run prepare first)", state, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "current epoch %d\n", n)
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	cmd.MarkFlagRequired("state")
	return cmd
}
