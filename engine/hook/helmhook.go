package hook

import (
	"encoding/json"
	"sync"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// Stage is when Loom applies a chart's object, from its hook
// annotation.
type Stage int

const (
	// NotHook is an ordinary child.
	NotHook Stage = iota
	// PreHook (pre-install, pre-upgrade) is applied first: every other
	// child waits until it is ready (a Job: complete).
	PreHook
	// PostHook (post-install, post-upgrade) waits until every ordinary
	// child and pre hook is ready.
	PostHook
	// NeverHook (test; pre/post-delete and -rollback only) is never
	// applied: Loom has no such event.
	NeverHook
)

// stageOf is the stage and weight of a chart object, as Helm 4 reads its
// hook annotations (see SpecOf).
func stageOf(obj map[string]any) (Stage, int) {
	h := SpecOf(obj)
	if h == nil {
		return NotHook, 0
	}
	return h.Stage(), h.Weight
}

// Spec is a chart object's hook as Helm 4 parses it; unknown is true
// for a hook with a type Helm does not know, which Helm skips whole.
type Spec struct {
	helmrelease.Hook
	unknown bool
}

// Stage is when Loom applies the hook.
func (h *Spec) Stage() Stage {
	if h.unknown {
		return NeverHook
	}
	stage := NeverHook
	for _, e := range h.Events {
		switch e {
		case helmrelease.HookTest:
			return NeverHook
		case helmrelease.HookPreInstall, helmrelease.HookPreUpgrade:
			stage = PreHook
		case helmrelease.HookPostInstall, helmrelease.HookPostUpgrade:
			if stage != PreHook {
				stage = PostHook
			}
		}
	}
	return stage
}

// SpecOf is obj's hook as Helm 4's own parser (releaseutil.
// SortManifests) reads its annotations, or nil for an object that is not
// a hook. Parses are kept by annotation values (specs), so that Helm
// logs an unknown hook type once, not on every render.
func SpecOf(obj map[string]any) *Spec {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	hooks, ok := ann[helmrelease.HookAnnotation].(string)
	if !ok {
		return nil
	}
	in := map[string]any{helmrelease.HookAnnotation: hooks}
	for _, k := range []string{helmrelease.HookWeightAnnotation, helmrelease.HookDeleteAnnotation} {
		if v, ok := ann[k].(string); ok {
			in[k] = v
		}
	}
	key := hooks + "\x00" + stringOr(in[helmrelease.HookWeightAnnotation]) + "\x00" + stringOr(in[helmrelease.HookDeleteAnnotation])
	if h, ok := specs.get(key); ok {
		return h
	}
	h := parseHelmHook(in)
	specs.put(key, h)
	return h
}

// parseHelmHook runs Helm's manifest sorter over a Job that carries only
// the hook annotations ann.
func parseHelmHook(ann map[string]any) *Spec {
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "hook", "annotations": ann}})
	if err != nil { // strings only: cannot fail
		return &Spec{unknown: true}
	}
	hooks, manifests, err := releaseutil.SortManifests(map[string]string{"hook.yaml": string(doc)}, nil, releaseutil.InstallOrder)
	switch {
	case err != nil || len(hooks) > 1:
		return &Spec{unknown: true}
	case len(hooks) == 1:
		return &Spec{Hook: *hooks[0]}
	case len(manifests) == 1:
		return nil
	}
	return &Spec{unknown: true}
}

// specCache keeps parsed hooks by their annotation values, up to a
// number of entries and of bytes (the values come from charts, and may
// come from a parent's spec).
type specCache struct {
	mu    sync.Mutex
	m     map[string]*Spec
	bytes int
}

// Bounds of specs.
const (
	maxSpecs      = 1024
	maxSpecsBytes = 256 << 10
)

var specs = &specCache{m: map[string]*Spec{}}

func (c *specCache) get(key string) (*Spec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[key]
	return h, ok
}

func (c *specCache) put(key string, h *Spec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSpecs || c.bytes+len(key) > maxSpecsBytes {
		return
	}
	c.m[key] = h
	c.bytes += len(key)
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}
