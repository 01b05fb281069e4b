package rollouts

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/render"
)

var invalidName = regexp.MustCompile(`[^a-z0-9.-]+`)

// templateSetName is the TemplateSet of set: its folder's name, made a
// valid object name, and, for a Loom that watches one namespace, that
// namespace after a dot, so that Looms of different namespaces keep
// rollouts of their own.
func templateSetName(set *render.Set, namespace string) string {
	n := strings.Trim(invalidName.ReplaceAllString(strings.ToLower(set.Name), "-"), "-.")
	if n == "" {
		n = "set"
	}
	if namespace != "" {
		n += "." + namespace
	}
	return n
}

// rolloutStore reads and writes one set's TemplateSet and its
// TemplateRevisions: every request a rollout sends goes through it, and
// each has its own deadline (timeout), so that a request the API server
// never answers fails the decision, which is made again, instead of
// stopping the set's rollouts for good (or, in its first decision or
// start, the controller's start).
type rolloutStore struct {
	client       dynamic.Interface
	name         string // the TemplateSet's name
	namespace    string // the namespace Loom watches; "" for all
	fieldManager string
	timeout      time.Duration // bounds each request
}

// call is the context of one request.
func (s *rolloutStore) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

func (s *rolloutStore) sets() dynamic.ResourceInterface {
	return s.client.Resource(v1alpha1.TemplateSetGVR)
}
func (s *rolloutStore) revisions() dynamic.ResourceInterface {
	return s.client.Resource(v1alpha1.TemplateRevisionGVR)
}

// revisionName is the TemplateRevision that keeps revision rev.
func (s *rolloutStore) revisionName(rev string) string { return s.name + "-" + rev }

// labels are the labels of this set's TemplateSet and TemplateRevisions.
func (s *rolloutStore) labels() map[string]string {
	l := map[string]string{v1alpha1.SetLabel: s.name}
	if s.namespace != "" {
		l[v1alpha1.NamespaceLabel] = s.namespace
	}
	return l
}

// canRead lists the TemplateSet once, so that a Loom whose RBAC does not
// cover rollouts does not wait for an informer that can never sync.
func (s *rolloutStore) canRead(ctx context.Context) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if _, err := s.sets().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + s.name, Limit: 1}); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("Loom may not read TemplateSets (see deploy/chart/files/rbac/rules.yaml): %w", err)
		}
		return fmt.Errorf("list TemplateSet %s: %w", s.name, err)
	}
	return nil
}

// informer returns an informer of the one TemplateSet.
func (s *rolloutStore) informer() cache.SharedIndexInformer {
	return dynamicinformer.NewFilteredDynamicInformer(s.client, v1alpha1.TemplateSetGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + s.name }).Informer()
}

// createSet creates the TemplateSet of the set in folder, or reads it if
// it exists.
func (s *rolloutStore) createSet(ctx context.Context, folder string) (*unstructured.Unstructured, error) {
	ts, err := (&v1alpha1.TemplateSet{ObjectMeta: metav1.ObjectMeta{
		Name:        s.name,
		Labels:      s.labels(),
		Annotations: map[string]string{v1alpha1.FolderAnnotation: folder},
	}}).ToUnstructured()
	if err != nil {
		return nil, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	created, err := s.sets().Create(cctx, ts, metav1.CreateOptions{FieldManager: s.fieldManager})
	if apierrors.IsAlreadyExists(err) {
		gctx, cancel := s.call(ctx)
		defer cancel()
		return s.sets().Get(gctx, s.name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create TemplateSet %s: %w", s.name, err)
	}
	return created, nil
}

// writeStatus writes ts's status. It carries the resourceVersion ts was
// read at, so a stale write fails.
func (s *rolloutStore) writeStatus(ctx context.Context, ts *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	written, err := s.sets().UpdateStatus(ctx, ts, metav1.UpdateOptions{FieldManager: s.fieldManager})
	if err != nil {
		return nil, fmt.Errorf("write the status of TemplateSet %s: %w", s.name, err)
	}
	return written, nil
}

// revision reads the TemplateRevision of rev. Its error is the API
// server's, wrapped, so that apierrors.IsNotFound tells a missing one.
func (s *rolloutStore) revision(ctx context.Context, rev string) (*unstructured.Unstructured, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	obj, err := s.revisions().Get(ctx, s.revisionName(rev), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read TemplateRevision %s: %w", s.revisionName(rev), err)
	}
	return obj, nil
}

// keep creates the TemplateRevision of set, revision rev, owned by the
// TemplateSet owner (when known). One that exists already is kept.
func (s *rolloutStore) keep(ctx context.Context, set *render.Set, rev string, owner *unstructured.Unstructured) error {
	tr := &v1alpha1.TemplateRevision{
		ObjectMeta: metav1.ObjectMeta{Name: s.revisionName(rev), Labels: s.labels()},
		Set:        s.name, Revision: rev, Files: map[string]string{},
	}
	for n, b := range set.Sources() {
		tr.Files[n] = string(b)
	}
	if owner != nil {
		tr.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.TemplateSetKind, Name: owner.GetName(), UID: owner.GetUID()}}
	}
	obj, err := tr.ToUnstructured()
	if err != nil {
		return err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	_, err = s.revisions().Create(cctx, obj, metav1.CreateOptions{FieldManager: s.fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("keep revision %s of %s: %w", rev, set.Dir, err)
	}
	return nil
}

// listRevisions lists this set's TemplateRevisions.
func (s *rolloutStore) listRevisions(ctx context.Context) ([]unstructured.Unstructured, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	list, err := s.revisions().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.SetLabel + "=" + s.name})
	if err != nil {
		return nil, fmt.Errorf("list the TemplateRevisions of %s: %w", s.name, err)
	}
	return list.Items, nil
}

// deleteRevision deletes the TemplateRevision item, unless it was made
// again since it was listed. One already gone is no error.
func (s *rolloutStore) deleteRevision(ctx context.Context, item *unstructured.Unstructured) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	err := s.revisions().Delete(ctx, item.GetName(), metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptr.To(item.GetUID())}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete TemplateRevision %s: %w", item.GetName(), err)
	}
	return nil
}
