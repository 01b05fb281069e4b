package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// AnnotationRevision is the release revision a hook object was created
// for. Loom sets it on every hook it applies; an object without it, or
// with another revision, is an older run of the hook.
const AnnotationRevision = "loom.dev/hook-revision"

// StatusField is the parent's status field that holds the Record.
const StatusField = "release"

// Phase is what the Record says of one hook in one revision.
type Phase string

// Phases of a hook.
const (
	// Running: Loom created the hook in this revision; it is not ready yet.
	Running Phase = "Running"
	// Succeeded: the hook became ready (a Job: Complete).
	Succeeded Phase = "Succeeded"
	// Failed: the hook failed (a Job: Failed). It is not created again in
	// this revision: a new revision (a change of the values or the chart)
	// runs it again, as `helm upgrade` does after a failed one.
	Failed Phase = "Failed"
	// Deleted: the hook's object went away after Loom created it, before
	// Loom saw it succeed or fail (the TTL controller, a user). It counts
	// as done.
	Deleted Phase = "Deleted"
)

// Done reports whether nothing waits for a hook in this phase any more.
func (p Phase) Done() bool { return p == Succeeded || p == Deleted }

// Ran reports whether Loom created the hook in this revision.
func (p Phase) Ran() bool { return p != "" }

// Run is one hook's phase in the recorded revision.
type Run struct {
	// Group, Kind, Namespace and Name name the hook's object.
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Phase is what became of it.
	Phase Phase `json:"phase"`
}

// Key names a hook's object.
type Key struct{ Group, Kind, Namespace, Name string }

// Key is the run's hook.
func (r Run) Key() Key { return Key{r.Group, r.Kind, r.Namespace, r.Name} }

// Record is the parent's status.release: the revision its children were
// last rendered at, the digest that revision was rendered from, and what
// became of each hook of that revision.
type Record struct {
	// Revision counts the releases, from 1 (the install).
	Revision int64 `json:"revision"`
	// Digest is Digest of what Revision renders.
	Digest string `json:"digest"`
	// Hooks are the hooks Loom created in Revision, by object.
	Hooks []Run `json:"hooks,omitempty"`
}

// Phase is what r says of hook k.
func (r Record) Phase(k Key) Phase {
	for _, h := range r.Hooks {
		if h.Key() == k {
			return h.Phase
		}
	}
	return ""
}

// With is r with hook k in phase p ("" removes it), in a fixed order.
func (r Record) With(k Key, p Phase) Record {
	out := r
	out.Hooks = slices.DeleteFunc(slices.Clone(r.Hooks), func(h Run) bool { return h.Key() == k })
	if p != "" {
		out.Hooks = append(out.Hooks, Run{Group: k.Group, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Phase: p})
	}
	slices.SortFunc(out.Hooks, func(a, b Run) int {
		return cmpKeys(a.Key(), b.Key())
	})
	return out
}

func cmpKeys(a, b Key) int {
	for _, p := range [][2]string{{a.Group, b.Group}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// RecordOf reads a Record from a parent's status (nil: none yet). A
// record that does not decode is an error: a revision Loom cannot read
// must not start the release over as an install.
func RecordOf(status map[string]any) (Record, error) {
	raw, ok := status[StatusField]
	if !ok || raw == nil {
		return Record{}, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return Record{}, fmt.Errorf("status.%s: %w", StatusField, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("status.%s: %w", StatusField, err)
	}
	if r.Revision < 0 {
		return Record{}, fmt.Errorf("status.%s.revision %d: must not be negative", StatusField, r.Revision)
	}
	return r, nil
}

// Map is r as a status field's value (JSON values only).
func (r Record) Map() map[string]any {
	out := map[string]any{"revision": r.Revision, "digest": r.Digest}
	if len(r.Hooks) > 0 {
		hooks := make([]any, 0, len(r.Hooks))
		for _, h := range r.Hooks {
			m := map[string]any{"kind": h.Kind, "name": h.Name, "phase": string(h.Phase)}
			if h.Group != "" {
				m["group"] = h.Group
			}
			if h.Namespace != "" {
				m["namespace"] = h.Namespace
			}
			hooks = append(hooks, m)
		}
		out["hooks"] = hooks
	}
	return out
}

// Digest is what a release renders from: the set's fingerprint (the
// chart, loom.yaml) and the parent's spec (the values). Maps are encoded
// with sorted keys, so the same spec gives the same digest.
func Digest(fingerprint string, spec any) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("digest of the spec: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(fingerprint))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Release is the revision a render is at.
type Release struct {
	// Revision is .Release.Revision.
	Revision int64
	// Install is .Release.IsInstall (revision 1); IsUpgrade is its
	// opposite.
	Install bool
	// Digest is what the revision renders from.
	Digest string
}

// Next is the release of a render from digest, after rec: the recorded
// revision while the digest is the same, the next one when it changed,
// and 1 (the install) when nothing was recorded. It is the same for the
// same arguments, so a reconcile whose status write failed, or that reads
// a stale parent, renders the same revision again.
func Next(rec Record, digest string) Release {
	switch {
	case rec.Revision == 0:
		return Release{Revision: 1, Install: true, Digest: digest}
	case rec.Digest == digest:
		return Release{Revision: rec.Revision, Install: rec.Revision == 1, Digest: digest}
	}
	return Release{Revision: rec.Revision + 1, Digest: digest}
}

// Start is the Record a reconcile at rel starts from: rec while it is
// the same revision, else an empty one of rel's.
func Start(rec Record, rel Release) Record {
	if rec.Revision == rel.Revision && rec.Digest == rel.Digest {
		return rec
	}
	return Record{Revision: rel.Revision, Digest: rel.Digest}
}

// Runs reports whether a hook of events runs at rel: pre- and
// post-install hooks on the install, pre- and post-upgrade hooks on an
// upgrade (Helm's events; test, delete and rollback hooks never run).
func Runs(events []helmrelease.HookEvent, rel Release) bool {
	for _, e := range events {
		switch e {
		case helmrelease.HookPreInstall, helmrelease.HookPostInstall:
			if rel.Install {
				return true
			}
		case helmrelease.HookPreUpgrade, helmrelease.HookPostUpgrade:
			if !rel.Install {
				return true
			}
		}
	}
	return false
}

// Policies are a hook's delete policies as Helm applies them: with none
// given, before-hook-creation.
func Policies(given []helmrelease.HookDeletePolicy) []helmrelease.HookDeletePolicy {
	if len(given) == 0 {
		return []helmrelease.HookDeletePolicy{helmrelease.HookBeforeHookCreation}
	}
	return given
}
