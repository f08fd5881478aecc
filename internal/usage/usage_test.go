package usage

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tree is a root with one subcommand taking no arguments, a required
// flag and an int flag; its RunE fails (status 1) or reports a usage
// error of its own (status 2) on request.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
	var name string
	var n int
	sub := &cobra.Command{
		Use:  "sub",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch name {
			case "fail":
				return errors.New("the work failed")
			case "bad":
				return Errorf("--name %q: not allowed", name)
			}
			return nil
		},
	}
	sub.Flags().StringVar(&name, "name", "", "a name")
	sub.Flags().IntVar(&n, "n", 0, "a number")
	sub.MarkFlagRequired("name")
	root.AddCommand(sub)
	Guard(root)
	return root
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"sub", "--name", "ok"}, 0, ""},
		{[]string{"sub", "--name", "fail"}, 1, "the work failed"},
		{[]string{"sub", "--name", "bad"}, 2, `--name "bad": not allowed`},
		{[]string{"sub"}, 2, "--name is required"},
		{[]string{"sub", "--name", "ok", "--n", "x"}, 2, `invalid argument "x" for "--n"`},
		{[]string{"sub", "--name", "ok", "--m"}, 2, "unknown flag: --m"},
		{[]string{"sub", "--name", "ok", "extra"}, 2, `unknown command "extra"`},
		{[]string{"other"}, 2, `unknown command "other"`},
	} {
		root := tree()
		root.SetArgs(tc.args)
		err := root.Execute()
		got := ExitStatus(root, tc.args, err)
		if got != tc.want || (tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg))) {
			t.Errorf("%v: status %d, error %v; want %d and %q", tc.args, got, err, tc.want, tc.msg)
		}
	}
}
