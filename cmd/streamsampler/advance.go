package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/epoch"
)

func newAdvanceCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:     "advance --state STATEDIR",
		Short:   "Make the next prepared epoch current and delete older ones",
		Example: `  streamsampler advance --state st`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := epoch.State{Dir: state}
			if _, err := loadStateConfig(st); err != nil {
				return err
			}
			n, err := st.Advance()
			if err != nil {
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
