//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/test/env"
)

// When a namespace that holds parents is deleted, Loom does not fight
// the namespace controller: the children it removes are not created
// again (the API server refuses, with the NamespaceTerminating cause),
// and no refusal counts as a failed apply or a failed reconcile, nor is
// retried.
//
// The namespace controller deletes the parents and their children in an
// order of its own; a ValidatingAdmissionPolicy that refuses the deletion
// of this namespace's parents holds them there, so that every parent sees
// its children go while its namespace terminates.
func TestNamespaceDeletionIsNotFought(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	l := startLoom(t, copyTemplates(t), ns, loomOptions{admin: true, quiet: true})
	const parents = 5
	for i := range parents {
		createParent(t, ns, fmt.Sprintf(`
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: p%d}
spec: {image: "nginx:1.27", config: {color: blue}}
`, i))
	}
	for i := range parents {
		waitCondition(t, ns, fmt.Sprintf("p%d", i), "Ready", "True")
	}
	holdParents(t, ns)

	failed := func() float64 { return l.counter(t, "loom_child_changes_total", map[string]string{"action": "failed"}) }
	errs := func() float64 { return l.counter(t, "loom_reconcile_total", map[string]string{"result": "error"}) }
	reconciles := func() float64 { return l.counter(t, "loom_reconcile_total", nil) }
	failed0, errs0, reconciles0 := failed(), errs(), reconciles()
	if err := e.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller deletes the children (the parents stay);
	// each deletion brings its parent back to Loom.
	eventually(t, 60*time.Second, "the parents' Deployments and ConfigMaps are gone", func(ctx context.Context) error {
		deploys, err := e.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		cms, err := e.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
		if err != nil {
			return err
		}
		if n, m := len(deploys.Items), len(cms.Items); n+m > 0 {
			return fmt.Errorf("%d Deployments and %d ConfigMaps left", n, m)
		}
		return nil
	})
	quiesce(t, 3*time.Second, reconciles)
	if reconciles() == reconciles0 {
		t.Fatal("Loom reconciled no parent while their namespace terminated; the test proves nothing")
	}
	for i := range parents {
		if _, err := e.Get(context.Background(), myresGVR, ns, fmt.Sprintf("p%d", i)); err != nil {
			t.Fatalf("parent p%d: %v; the test needs the parents held while the namespace terminates", i, err)
		}
	}
	if d := failed() - failed0; d != 0 {
		t.Errorf("%v failed child applies while the namespace terminated, want none", d)
	}
	if d := errs() - errs0; d != 0 {
		t.Errorf("%v failed reconciles while the namespace terminated, want none", d)
	}
}

// holdParents refuses, until the test ends, the deletion of every
// MyResource in ns, with a ValidatingAdmissionPolicy and its binding.
func holdParents(t *testing.T, ns string) {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	name := "e2e-hold-parents-" + ns
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule: admissionv1.Rule{APIGroups: []string{myresGVR.Group}, APIVersions: []string{"*"},
						Resources: []string{myresGVR.Resource}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "held by the e2e test"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	vap := e.Kube.AdmissionregistrationV1()
	if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range []error{
			vap.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}),
			vap.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete the policy that holds the parents: %v", err)
			}
		}
	})
	if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy takes effect once the API server has loaded it.
	eventually(t, 30*time.Second, "the deletion of a parent of "+ns+" is refused", func(ctx context.Context) error {
		err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(ctx, "p0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("a dry-run delete passed")
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return err
		}
		return nil
	})
}
