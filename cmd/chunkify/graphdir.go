package main

import (
	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/internal/usage"
)

// graphDirArg is the graph directory of info and verify, given as the
// positional DIR or, as streamsampler's commands take it, --graph DIR.
type graphDirArg struct{ flag string }

// add registers --graph on cmd and lets cmd take DIR instead.
func (g *graphDirArg) add(cmd *cobra.Command) {
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.Flags().StringVar(&g.flag, "graph", "", "graph directory (the same as the DIR argument)")
}

// dir returns the directory named by args or --graph: exactly one of
// them, or both naming the same.
func (g *graphDirArg) dir(cmd *cobra.Command, args []string) (string, error) {
	switch {
	case len(args) == 1 && g.flag != "" && args[0] != g.flag:
		return "", usage.Errorf("%s: DIR %q and --graph %q differ: give one of them", cmd.Name(), args[0], g.flag)
	case len(args) == 1:
		return args[0], nil
	case g.flag != "":
		return g.flag, nil
	}
	return "", usage.Errorf("%s: give the graph directory, as DIR or --graph DIR", cmd.Name())
}
