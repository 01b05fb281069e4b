package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/render"
)

func newTestCommand() *cobra.Command {
	var (
		update    bool
		timeout   time.Duration
		templates []string // -t, as render and crd take the set
		loomNS    string
	)
	cmd := &cobra.Command{
		Use:   "test [-t] PATH...",
		Short: "Run the golden-file tests of template sets",
		Long: `Test renders every case in a template set's tests/ folder and compares it
with the expected output. A case is an input parent, tests/NAME.yaml, and its
expected children, tests/NAME.golden.yaml. Given a folder that is not itself
a set, test finds every set below it. A mismatch prints a unified diff
(-golden +rendered) and makes the command exit 1.

A case's lookups find the objects in tests/NAME.lookups.yaml, when there is
one, read as 'loom render --lookups' reads its file (objects that name no
namespace are in default; for a parent with no metadata.uid, its objects
stand for the parent's own children as they are);
otherwise they find nothing. The golden file holds the children Loom would
apply now: a child that waits for another it looked up (not there, or not
ready, in NAME.lookups.yaml) is left out, as 'loom render' leaves it out.

The Secrets of NAME.lookups.yaml in --loom-namespace that register workload
clusters are the case's registered clusters (see 'loom render'): the golden
file shows each child's cluster in its loom.dev/cluster annotation.

When loom.yaml has a schema, each case's parent is first admitted as the
API server admits it on create (see 'loom render'): the golden file holds
what renders for the parent the cluster would store, and a parent the API
server would refuse fails the case with the API server's message.

When loom.yaml serves several versions of the parent (versions:), a case's
parent may be in any of them (it is converted as 'loom render' converts it),
and each case's parent is also converted to every other version and back,
with no cluster: a trip that does not give the parent back fails the case,
naming the parent, the versions and the fields, as does a trip that gives
it back only through the loom.dev/conversion-data annotation although the
other version's schema has the field (a conversion that drops it).

Each parent's render stops after --timeout (see 'loom render'): a case whose
template loops for ever fails with the line of the loop.

Exit status: 0 when every case passed (or, with --update, was rewritten); 1
when a case failed, a set could not be loaded, or the command was used
wrongly.`,
		Example: `  loom test -t templates/myresource   # -t as in loom render and loom crd
  loom test templates/myresource      # the same
  loom test templates/            # every set below
  loom test --update templates/   # rewrite the golden files; review the diff

  # A case whose lookups find the namespace's loom-platform ConfigMap:
  #   tests/mirror.yaml           the parent
  #   tests/mirror.lookups.yaml   the ConfigMap
  #   tests/mirror.golden.yaml    what renders (loom test --update writes it)`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			args = append(templates, args...)
			if len(args) == 0 {
				return errors.New("give the sets to test: -t SET (as loom render and loom crd take it) or PATH arguments")
			}
			out := cmd.OutOrStdout()
			var passed, failed, updated int
			for _, path := range args {
				sets, err := render.LoadAll(path)
				if err != nil {
					return err
				}
				for _, set := range sets {
					results, err := offline.RunOptions(set, offline.Options{Update: update, Timeout: timeout, LoomNamespace: loomNS})
					if err != nil {
						return err
					}
					if len(results) == 0 {
						fmt.Fprintf(out, "?    %s: no cases in %s/\n", set.Dir, render.TestsDir)
					}
					for _, r := range results {
						switch {
						case r.Err != nil:
							failed++
							fmt.Fprintf(out, "FAIL %s/%s: %v\n", r.Set, r.Case, r.Err)
						case r.Diff != "":
							failed++
							fmt.Fprintf(out, "FAIL %s/%s: output differs from the golden file\n%s\n", r.Set, r.Case, r.Diff)
						case r.Updated:
							updated++
							fmt.Fprintf(out, "UPD  %s/%s\n", r.Set, r.Case)
						default:
							passed++
							fmt.Fprintf(out, "ok   %s/%s\n", r.Set, r.Case)
						}
					}
				}
			}
			fmt.Fprintf(out, "%d passed, %d failed", passed, failed)
			if update {
				fmt.Fprintf(out, ", %d updated", updated)
			}
			fmt.Fprintln(out)
			if failed > 0 {
				return errors.New("golden tests failed")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&update, "update", false, "rewrite golden files with what renders now")
	cmd.Flags().StringArrayVarP(&templates, "templates", "t", nil, "a template set's folder, or a folder of sets, as the PATH arguments; repeatable")
	_ = cmd.MarkFlagDirname("templates")
	cmd.Flags().DurationVar(&timeout, "timeout", offline.DefaultTimeout, "stop a parent's render after this long (a template that loops for ever); 0 means no limit")
	cmd.Flags().StringVar(&loomNS, "loom-namespace", offline.DefaultLoomNamespace, "Loom's namespace: a case's lookups Secrets in it register workload clusters")
	return cmd
}
