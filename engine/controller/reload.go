package controller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/crdinstall"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
)

// reload loads every set again and swaps in those that changed; Run's
// templatewatch calls it once a burst of file events has settled. A set that
// fails to load keeps its last good version; the failure is logged and
// recorded as a Warning Event on the parent kind's CRD.
func (m *Manager) reload(ctx context.Context) {
	logger := klog.FromContext(ctx)
	sets, loadErr := render.LoadAll(m.opts.TemplatesDir)
	// With InstallCRDs, a set whose CRD is refused keeps its running
	// version, or is not added. Installing waits on the API server, so it
	// runs before the lock.
	refused, crdChanged := m.installer.Install(ctx, sets)
	m.mu.Lock()
	defer m.mu.Unlock()
	// Every folder that still holds a set, loadable or not. A set that
	// fails to load keeps its last good version.
	seen := map[string]bool{}
	for _, s := range sets {
		seen[s.Dir] = true
	}
	var broken []*render.SetError
	for _, err := range splitJoined(loadErr) {
		if errors.Is(err, render.ErrNoSets) {
			continue // the last set was removed
		}
		var se *render.SetError
		if !errors.As(err, &se) {
			logger.Error(err, "Could not look for template sets")
			return
		}
		seen[se.Dir] = true
		broken = append(broken, se)
	}
	for _, s := range sets {
		if refused[s.Dir] != nil {
			continue
		}
		gk := s.ParentGVK().GroupKind()
		c, ok := m.controllers[gk]
		if !ok {
			logger.Info("Template set added", "set", s.Dir, "kind", gk.String())
			if err := m.addSetLocked(s); err != nil {
				logger.Error(err, "Template set rejected", "set", s.Dir)
			}
			continue
		}
		old := c.Set()
		if old.Dir != s.Dir {
			if seen[old.Dir] {
				logger.Error(nil, "Template set rejected: another set already renders children of its parent kind",
					"set", s.Dir, "kind", gk.String(), "other", old.Dir)
				continue
			}
			// The folder was renamed: the running controller carries on.
			logger.Info("Template set moved", "from", old.Dir, "to", s.Dir, "kind", gk.String())
			delete(m.dirs, old.Dir)
			m.dirs[s.Dir] = gk
		}
		if why := restartFor(old, s, crdChanged[s.Dir]); why != "" {
			logger.Info("Template set changed "+why+"; restarting its controller", "set", s.Dir,
				"hub", s.ParentGVK().Version, "storageVersion", pipeline.StorageGVK(s).Version)
			m.retireLocked(gk)
			if err := m.addSetLocked(s); err != nil {
				logger.Error(err, "Template set rejected", "set", s.Dir)
			}
			m.metrics.Reloads.WithLabelValues(s.Dir, "success").Inc()
			continue
		}
		if old.Dir != s.Dir || old.Fingerprint() != s.Fingerprint() {
			c.UseSet(s)
			m.metrics.Reloads.WithLabelValues(s.Dir, "success").Inc()
			logger.Info("Template set reloaded; reconciling every parent", "set", s.Dir, "kind", gk.String())
			c.EnqueueAll()
		}
	}
	m.reportSchemaLocked(refused)
	for _, se := range broken {
		m.metrics.Reloads.WithLabelValues(se.Dir, "error").Inc()
		logger.Error(se, "Template set failed to load; keeping its last good version", "set", se.Dir)
		if gk, ok := m.dirs[se.Dir]; ok {
			m.eventOnKind(gk, "TemplateSetInvalid", se.Error())
		}
	}
	for dir, gk := range m.dirs {
		if seen[dir] {
			continue
		}
		// The set is gone: stop reconciling its kind. Children stay as
		// they are; a set added back later starts a new controller.
		logger.Info("Template set removed; its parents are no longer reconciled", "set", dir, "kind", gk.String())
		delete(m.dirs, dir)
		if c := m.controllers[gk]; c != nil && c.Set().Dir == dir {
			m.retireLocked(gk)
		}
	}
	m.metrics.Sets.Set(float64(len(m.dirs)))
	m.perms.Wake()
}

// restartFor says why the controller of old must be replaced by one of s,
// a new version of it: s reads another version of the parent kind (the
// hub its templates read, or the storage version its informer watches),
// or has a new schema whose storage the informer's watch does not see
// (schemaChanged: crdinstall's installCRD). "" means it needs none.
func restartFor(old, s *render.Set, schemaChanged bool) string {
	switch {
	case schemaChanged:
		return "its parent's schema"
	case old.ParentGVK() != s.ParentGVK():
		return "its parent version"
	case pipeline.StorageGVK(old) != pipeline.StorageGVK(s):
		return "its parent's storage version"
	}
	return ""
}

// eventOnKind records a Warning Event on the CRD that defines gk, which is
// where `kubectl describe crd` shows it.
func (m *Manager) eventOnKind(gk schema.GroupKind, reason, msg string) {
	c := m.controllers[gk]
	if m.crds == nil || c == nil {
		return // its CRD is not known yet
	}
	gvr, running := c.Resource()
	if !running {
		return // its CRD is not known yet
	}
	obj, ok, _ := m.crds.GetByKey(gvr.Resource + "." + gk.Group)
	if !ok {
		return
	}
	crd := obj.(*unstructured.Unstructured)
	m.recorder.Event(crd, corev1.EventTypeWarning, reason, msg)
}

// splitJoined undoes errors.Join.
func splitJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// reportSchemaLocked sets the SchemaAccepted condition of each running
// set's TemplateSet from what the installer returned.
func (m *Manager) reportSchemaLocked(results map[string]error) {
	for dir, err := range results {
		gk, ok := m.dirs[dir]
		if c := m.controllers[gk]; ok && c != nil {
			c.SetSchema(crdinstall.SchemaCondition(err))
		}
	}
}
