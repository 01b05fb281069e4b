package crdinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/migrate"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/shard"
)

// BreakingChangeError means a set's CRD was not applied: the change from
// the installed CRD would break parents already stored, and the set's
// loom.yaml does not set schema.allowBreakingChanges, or the change
// removes a version still in use, which nothing overrides.
type BreakingChangeError struct {
	// CRD is the CRD's name.
	CRD    string
	Breaks []crd.Break
}

func (e *BreakingChangeError) Error() string {
	for _, b := range e.Breaks {
		if !b.Overridable() {
			return fmt.Sprintf("CRD %s not applied: the change would break stored parents: %s; %s",
				e.CRD, breaksText(e.Breaks), crd.RetiredAdvice(b.Version))
		}
	}
	return fmt.Sprintf("CRD %s not applied: the schema change would break stored parents: %s; set schema.allowBreakingChanges: true in loom.yaml to apply it anyway",
		e.CRD, breaksText(e.Breaks))
}

// refuses reports whether breaks keep a CRD from being applied: any break
// when loom.yaml does not allow them, and, even when it does, one that no
// setting overrides (a version removed while still in use).
func refuses(breaks []crd.Break, allowed bool) bool {
	for _, b := range breaks {
		if !allowed || !b.Overridable() {
			return true
		}
	}
	return false
}

// breaksText lists breaks on one line.
func breaksText(breaks []crd.Break) string {
	lines := make([]string, len(breaks))
	for i, b := range breaks {
		lines[i] = b.String()
	}
	return strings.Join(lines, "; ")
}

// CRDs is the CustomResourceDefinitions' resource, which the installer
// writes and the Manager watches.
var CRDs = apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// Installer applies the CRDs of template sets (loom run --install-crds):
// each set's generated CRD, and a chart set's own CRDs (crds/). It keeps,
// per set folder, the CRD it last applied, so that a reload applies only
// what changed. It is used by one goroutine at a time.
type Installer struct {
	client       dynamic.Interface
	fieldManager string
	recorder     record.EventRecorder
	// timeout bounds the reads and the apply of one CRD, and then the
	// wait until it is established.
	timeout time.Duration
	// installed holds, per set folder, the CRD last installed for it as
	// JSON.
	installed map[string]string
	// webhook is where a CRD of several versions sends conversions (nil:
	// the generated CRD's crd.DefaultWebhook).
	webhook *crd.WebhookConfig
	// migrator moves the stored parents of each CRD in place to its
	// storage version (Migrating; nil: none); started by the first
	// Install, with its context.
	migrator      *migrate.Migrator
	startMigrator sync.Once
}

// Migrating makes the Installer move the stored parents of every set's
// CRD in place (applied now or before, or left as another manager
// installed it: the Migrator checks) to its storage version, and returns
// it. disco tells whether the API server serves StorageVersionMigrations;
// a sharded replica (shard not nil) migrates only while it holds bucket
// 0; reg receives the metrics.
func (i *Installer) Migrating(disco discovery.DiscoveryInterface, shard heldBuckets, reg prometheus.Registerer) *Installer {
	i.migrator = migrate.New(i.client, disco, migrate.Options{FieldManager: i.fieldManager, Owns: OwnsCRD,
		Single: singleWriter(shard), Timeout: i.timeout, Registry: reg})
	return i
}

// heldBuckets is what the migration asks of a sharded replica.
type heldBuckets interface{ Held() shard.Set }

// singleWriter says whether this replica migrates now: nil (always) when
// it is not sharded (the only replica, or the leader: the Manager runs
// only while leading); sharded, while it holds bucket 0.
func singleWriter(sh heldBuckets) func() bool {
	if sh == nil {
		return nil
	}
	return func() bool { return sh.Held().Has(0) }
}

// Webhook is where the conversion webhook of the CRDs the Installer
// applies is served (engine/crd's WebhookConfig).
type Webhook = crd.WebhookConfig

// SetWebhook points the conversion webhook of every CRD of several
// versions the Installer applies from now on at w (loom run's
// --webhook-url or --webhook-service). A caBundle left empty in w is left
// out of what the Installer applies, so that another field manager (the
// certificate rotator, cert-manager's cainjector) can own it.
func (i *Installer) SetWebhook(w *crd.WebhookConfig) {
	if i != nil {
		i.webhook = w
	}
}

// New returns an Installer that applies as fieldManager through client,
// records Events on the CRDs with recorder, and bounds each CRD's install
// with timeout.
func New(client dynamic.Interface, fieldManager string, recorder record.EventRecorder, timeout time.Duration) *Installer {
	return &Installer{client: client, fieldManager: fieldManager, recorder: recorder, timeout: timeout, installed: map[string]string{}}
}

// Install applies the CRD of each set whose generated CRD changed since
// it last applied it. It returns, per set folder, why the set must not
// start or replace its running version (its CRD could not be generated,
// was refused as a breaking change, or was not established in time), nil
// for the others; and the folders of the sets whose CRD's schema it
// changed, whose running controller must start again (see installCRD).
// Each refusal is logged and recorded as an Event on the CRD. A nil
// Installer (--install-crds off) installs nothing and returns nil maps.
// The Manager calls it in Run before the sets start, then on the template
// watcher's goroutine only.
func (i *Installer) Install(ctx context.Context, sets []*render.Set) (results map[string]error, changed map[string]bool) {
	if i == nil {
		return nil, nil
	}
	results, changed = map[string]error{}, map[string]bool{}
	logger := klog.FromContext(ctx)
	if i.migrator != nil {
		i.startMigrator.Do(func() { go i.migrator.Run(ctx) })
	}
	for _, s := range sets {
		// A chart's own CRDs (crds/): created when missing, never updated.
		// A failure is logged, and the set runs: its children of those
		// kinds fail to apply, and their parents say so.
		if err := i.installChartCRDs(ctx, s); err != nil {
			logger.Error(err, "A chart's CRD was not installed", "set", s.Dir)
		}
		gen, err := s.CRD()
		if err == nil && i.webhook != nil {
			err = crd.SetWebhook(gen, *i.webhook)
		}
		if err != nil {
			results[s.Dir] = fmt.Errorf("generate the CRD of set %s: %w", s.Dir, err)
			logger.Error(err, "Could not generate the set's CRD; the set does not start or keeps its running version", "set", s.Dir)
			continue
		}
		key, _ := json.Marshal(gen)
		if i.installed[s.Dir] == string(key) {
			results[s.Dir] = nil
			i.inPlace(gen.Name)
			continue
		}
		schemaChanged, err := i.installCRD(ctx, s, gen)
		results[s.Dir] = err
		if err != nil {
			logger.Error(err, "CRD not installed; the set does not start or keeps its running version", "set", s.Dir, "crd", gen.Name)
			continue
		}
		i.installed[s.Dir] = string(key)
		changed[s.Dir] = schemaChanged
		i.inPlace(gen.Name)
	}
	return results, changed
}

// inPlace hands the CRD named name, in place, to the Migrator.
func (i *Installer) inPlace(name string) {
	i.migrator.Enqueue(name)
}

// ConditionSchemaAccepted is the TemplateSet condition that says whether
// the set's CRD was installed (loom run --install-crds).
const ConditionSchemaAccepted = "SchemaAccepted"

// SchemaCondition is the SchemaAccepted condition for an error Install
// returned for a set (nil when its CRD is installed).
func SchemaCondition(err error) metav1.Condition {
	var be *BreakingChangeError
	switch {
	case err == nil:
		return metav1.Condition{Type: ConditionSchemaAccepted, Status: metav1.ConditionTrue, Reason: "Installed",
			Message: "the set's CRD is installed"}
	case errors.As(err, &be):
		return metav1.Condition{Type: ConditionSchemaAccepted, Status: metav1.ConditionFalse, Reason: "BreakingChange",
			Message: eventMessage(err.Error())}
	}
	return metav1.Condition{Type: ConditionSchemaAccepted, Status: metav1.ConditionFalse, Reason: "InstallFailed",
		Message: eventMessage(err.Error())}
}

// installCRD server-side applies gen, the CRD of set s, unless the live
// CRD is another manager's or the change would break stored parents, and
// waits until it is established.
//
// A CRD that does not exist is created. One that exists is Loom's when its
// managedFields hold an Apply of Loom's field manager (Loom created it),
// or when the loom.dev/adopt annotation names that field manager (someone
// handed it over); Loom then applies with force, since the set's loom.yaml
// is the kind's API and a hand edit would otherwise conflict forever. A
// CRD installed by someone else is left alone: the set runs on it as
// without --install-crds, and a Warning Event says why.
//
// It reports whether it changed the schema of a CRD that existed: the API
// server then serves the kind from new storage, but a watch opened before
// carries on with the old one, which prunes the new fields from what it
// sends, for up to twice the API server's request timeout. The kind's
// controller must start again, with a new watch.
func (i *Installer) installCRD(ctx context.Context, s *render.Set, gen *apiextv1.CustomResourceDefinition) (bool, error) {
	logger := klog.FromContext(ctx)
	rctx, cancel := context.WithTimeout(ctx, i.timeout)
	defer cancel()
	check, err := LiveBreaks(rctx, i.client, gen)
	if err != nil {
		return false, err
	}
	live, breaks := check.Live, check.Breaks
	if live != nil && !OwnsCRD(live, i.fieldManager) {
		msg := fmt.Sprintf("CRD %s was not installed by Loom: left as it is; annotate it %s=%s to hand it over to Loom",
			gen.Name, object.AnnotationAdopt, i.fieldManager)
		logger.Info("CRD was not installed by Loom; running the set on it as it is", "set", s.Dir, "crd", gen.Name)
		i.recorder.Event(live, corev1.EventTypeWarning, "CRDNotManaged", msg)
		return false, nil
	}
	allowed := s.Config.Schema != nil && s.Config.Schema.AllowBreakingChanges
	if refuses(breaks, allowed) {
		err := &BreakingChangeError{CRD: gen.Name, Breaks: breaks}
		i.recorder.Event(live, corev1.EventTypeWarning, "BreakingChangeRefused", eventMessage(err.Error()))
		return false, err
	}
	if err := i.applyCRD(rctx, gen, live != nil); err != nil {
		if live != nil {
			i.recorder.Event(live, corev1.EventTypeWarning, "CRDNotApplied", eventMessage(err.Error()))
		}
		return false, err
	}
	if len(breaks) > 0 {
		msg := fmt.Sprintf("CRD %s applied with a breaking change, as schema.allowBreakingChanges allows: %s", gen.Name, breaksText(breaks))
		logger.Info("Applied a breaking change to the CRD, as loom.yaml allows", "set", s.Dir, "crd", gen.Name, "breaks", len(breaks))
		i.recorder.Event(live, corev1.EventTypeNormal, "BreakingChangeAllowed", eventMessage(msg))
	}
	if err := waitEstablished(ctx, i.client, gen.Name, i.timeout); err != nil {
		return false, err
	}
	logger.Info("CRD installed", "set", s.Dir, "crd", gen.Name, "schemaChanged", check.Changed)
	return check.Changed, nil
}

// LiveCheck is what LiveBreaks found.
type LiveCheck struct {
	// Live is the installed CRD, or nil when there is none.
	Live *unstructured.Unstructured
	// Changed says that the generated CRD changes the live one's scope,
	// versions or schemas.
	Changed bool
	// Breaks are the changes that would break stored parents.
	Breaks []crd.Break
}

// LiveBreaks reads the installed CRD named like gen and, when gen changes
// its scope, versions or schemas, lists the stored parents in every
// namespace and returns the changes that would break them (crd.Check,
// with gen's own validation).
func LiveBreaks(ctx context.Context, client dynamic.Interface, gen *apiextv1.CustomResourceDefinition) (LiveCheck, error) {
	u, err := client.Resource(CRDs).Get(ctx, gen.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return LiveCheck{}, nil
	}
	if err != nil {
		return LiveCheck{}, fmt.Errorf("read CRD %s: %w", gen.Name, err)
	}
	live := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, live); err != nil {
		return LiveCheck{}, fmt.Errorf("read CRD %s: %w", gen.Name, err)
	}
	if !schemaChanged(live, gen) {
		return LiveCheck{Live: u}, nil
	}
	stored, err := listParents(ctx, client, live)
	if err != nil {
		return LiveCheck{}, err
	}
	breaks, err := crd.Check(live, gen, stored)
	if err != nil {
		return LiveCheck{}, err
	}
	return LiveCheck{Live: u, Changed: true, Breaks: breaks}, nil
}

// schemaChanged reports whether gen differs from live in what Breaking
// compares: the scope, the versions served, their schemas.
func schemaChanged(live, gen *apiextv1.CustomResourceDefinition) bool {
	if live.Spec.Scope != gen.Spec.Scope || len(live.Spec.Versions) != len(gen.Spec.Versions) {
		return true
	}
	for i, v := range gen.Spec.Versions {
		lv := live.Spec.Versions[i]
		if lv.Name != v.Name || lv.Served != v.Served || !equality.Semantic.DeepEqual(lv.Schema, v.Schema) {
			return true
		}
	}
	return false
}

// listParents lists the live CRD's objects in every namespace, at a
// version it serves (its storage version if served), in pages.
func listParents(ctx context.Context, client dynamic.Interface, live *apiextv1.CustomResourceDefinition) ([]map[string]any, error) {
	version := ""
	for _, v := range live.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return nil, nil // nothing can be read, and nothing can break
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: version, Resource: live.Spec.Names.Plural}
	var out []map[string]any
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the stored parents of CRD %s: %w", live.Name, err)
		}
		for _, item := range list.Items {
			out = append(out, item.Object)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// OwnsCRD reports whether the CRD is Loom's: applied by its field manager,
// or handed over with the loom.dev/adopt annotation naming it.
func OwnsCRD(live *unstructured.Unstructured, manager string) bool {
	if live.GetAnnotations()[object.AnnotationAdopt] == manager {
		return true
	}
	for _, f := range live.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// applyCRD server-side applies gen as Loom's field manager: with force
// when it exists (Loom's, see installCRD), without when it is created, so
// that a CRD someone else creates meanwhile with other values is a
// conflict, not taken over.
func (i *Installer) applyCRD(ctx context.Context, gen *apiextv1.CustomResourceDefinition, exists bool) error {
	obj, err := crd.Unstructured(gen)
	if err != nil {
		return fmt.Errorf("apply CRD %s: %w", gen.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(apiextv1.SchemeGroupVersion.String())
	u.SetKind("CustomResourceDefinition")
	if _, err := i.client.Resource(CRDs).Apply(ctx, gen.Name, u, metav1.ApplyOptions{FieldManager: i.fieldManager, Force: exists}); err != nil {
		return fmt.Errorf("apply CRD %s: %w", gen.Name, err)
	}
	return nil
}

// waitEstablished polls the CRD until it is established, for at most
// timeout; the error carries the last reason it was not.
func waitEstablished(ctx context.Context, client dynamic.Interface, name string, timeout time.Duration) error {
	why := "not read yet"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		u, err := client.Resource(CRDs).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		if Established(u) {
			return true, nil
		}
		why = "Established is not True"
		if status, message := conditionOf(u, "NamesAccepted"); status == "False" {
			why = "NamesAccepted=False: " + message
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established within %s (%s): %w", name, timeout, why, err)
	}
	return nil
}

// Established reports whether the CRD's Established condition is True.
func Established(crd *unstructured.Unstructured) bool {
	status, _ := conditionOf(crd, "Established")
	return status == "True"
}

// conditionOf reads the status and message of the CRD's first condition
// of type typ; both are empty when it has none.
func conditionOf(crd *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			status, _ = m["status"].(string)
			message, _ = m["message"].(string)
			return status, message
		}
	}
	return "", ""
}

// eventMessage caps an Event's message: the API server refuses a long one.
func eventMessage(msg string) string {
	const max = 1024
	if len(msg) > max {
		return msg[:max-3] + "..."
	}
	return msg
}
