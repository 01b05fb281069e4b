package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/controller/crdinstall"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

var errBreakingChanges = errors.New("the CRD change would break stored parents")

// crdCheck is loom crd's --check: compare the generated CRD with the one
// the cluster serves, the way loom run --install-crds does before it
// applies it.
type crdCheck struct {
	enabled bool
	kube    kubeTarget
	// client reaches the cluster of a kubeconfig (tests replace it).
	client func(kube kubeTarget) (dynamic.Interface, error)
}

// newCRDCheck registers --check and --kubeconfig on loom crd's flags.
func newCRDCheck(f *pflag.FlagSet) *crdCheck {
	c := &crdCheck{client: func(kube kubeTarget) (dynamic.Interface, error) {
		rc, err := restConfig(kube)
		if err != nil {
			return nil, err
		}
		return dynamic.NewForConfig(rc)
	}}
	f.BoolVar(&c.enabled, "check", false, "instead of printing the CRD, check it against the cluster's: print the changes that would break stored parents, exit 1 when loom run --install-crds would refuse them (2 when the check failed)")
	c.kube.register(f, "with --check: ")
	return c
}

// run does nothing and returns false without --check. With it, it
// generates the set's CRD, reads the live CRD and the stored parents,
// prints what the generated CRD would break, and returns true with an
// exitError: code 1 when something breaks that loom run --install-crds
// would refuse (not when loom.yaml allows it), 2 when the check failed.
func (c *crdCheck) run(ctx context.Context, w io.Writer, set *render.Set) (bool, error) {
	if !c.enabled {
		return false, nil
	}
	cfg := set.Config
	gen, err := set.CRD()
	if err != nil {
		return true, &exitError{code: 2, err: fmt.Errorf("generate the CRD: %w", err)}
	}
	return true, c.check(ctx, w, cfg, gen)
}

// check compares gen with the live CRD (see run).
func (c *crdCheck) check(ctx context.Context, w io.Writer, cfg config.Config, gen *apiextv1.CustomResourceDefinition) error {
	client, err := c.client(c.kube)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	check, err := crdinstall.LiveBreaks(ctx, client, gen)
	live, breaks := check.Live, check.Breaks
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	switch {
	case live == nil:
		fmt.Fprintf(w, "CRD %s is not installed: nothing can break\n", gen.Name)
		return nil
	case !crdinstall.OwnsCRD(live, apply.FieldManager):
		fmt.Fprintf(w, "note: CRD %s was not installed by Loom: loom run --install-crds leaves it alone unless it is annotated %s=loom\n",
			gen.Name, object.AnnotationAdopt)
	}
	if len(breaks) == 0 {
		fmt.Fprintf(w, "CRD %s: no change breaks a stored parent\n", gen.Name)
		return nil
	}
	fmt.Fprintf(w, "CRD %s: %d change(s) would break stored parents:\n", gen.Name, len(breaks))
	for _, b := range breaks {
		fmt.Fprintf(w, "  %s: %s\n", b.Kind, b)
	}
	for _, b := range breaks {
		if !b.Overridable() {
			fmt.Fprintln(w, "loom run --install-crds refuses them: "+crd.RetiredAdvice(b.Version))
			return &exitError{code: 1, err: errBreakingChanges}
		}
	}
	if cfg.Schema != nil && cfg.Schema.AllowBreakingChanges {
		fmt.Fprintln(w, "loom.yaml sets schema.allowBreakingChanges: loom run --install-crds would apply them")
		return nil
	}
	fmt.Fprintln(w, "loom run --install-crds refuses them; set schema.allowBreakingChanges: true in loom.yaml to apply them anyway")
	return &exitError{code: 1, err: errBreakingChanges}
}
