package hook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The revision moves when what the parent renders moves (the chart or
// the values), and only then; a failed status write renders the same
// revision again.
func TestNext(t *testing.T) {
	tests := []struct {
		name   string
		rec    Record
		digest string
		want   Release
	}{
		{"nothing recorded: the install", Record{}, "d1", Release{Revision: 1, Install: true, Digest: "d1"}},
		{"the install again", Record{Revision: 1, Digest: "d1"}, "d1", Release{Revision: 1, Install: true, Digest: "d1"}},
		{"values or chart changed: an upgrade", Record{Revision: 1, Digest: "d1"}, "d2", Release{Revision: 2, Digest: "d2"}},
		{"the upgrade again", Record{Revision: 2, Digest: "d2"}, "d2", Release{Revision: 2, Digest: "d2"}},
		{"changed back: another upgrade", Record{Revision: 2, Digest: "d2"}, "d1", Release{Revision: 3, Digest: "d1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Next(tt.rec, tt.digest)); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
		})
	}
}

// The digest covers the set and the spec, and not the order of keys.
func TestDigest(t *testing.T) {
	d := func(fp string, spec any) string {
		s, err := Digest(fp, spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := d("set1", map[string]any{"image": "a", "replicas": int64(1)})
	if b := d("set1", map[string]any{"replicas": int64(1), "image": "a"}); a != b {
		t.Errorf("the same spec gave %s and %s", a, b)
	}
	if b := d("set2", map[string]any{"image": "a", "replicas": int64(1)}); a == b {
		t.Error("a chart change did not change the digest")
	}
	if b := d("set1", map[string]any{"image": "b", "replicas": int64(1)}); a == b {
		t.Error("a values change did not change the digest")
	}
}

// Hooks run on their events: install hooks on revision 1, upgrade hooks
// after it.
func TestRuns(t *testing.T) {
	install, upgrade := Release{Revision: 1, Install: true}, Release{Revision: 2}
	ev := func(e ...helmrelease.HookEvent) []helmrelease.HookEvent { return e }
	tests := []struct {
		name                 string
		events               []helmrelease.HookEvent
		onInstall, onUpgrade bool
	}{
		{"pre-install", ev(helmrelease.HookPreInstall), true, false},
		{"post-install", ev(helmrelease.HookPostInstall), true, false},
		{"pre-upgrade", ev(helmrelease.HookPreUpgrade), false, true},
		{"pre-install,pre-upgrade", ev(helmrelease.HookPreInstall, helmrelease.HookPreUpgrade), true, true},
		{"test", ev(helmrelease.HookTest), false, false},
		{"pre-delete", ev(helmrelease.HookPreDelete), false, false},
	}
	for _, tt := range tests {
		if got := Runs(tt.events, install); got != tt.onInstall {
			t.Errorf("%s on the install: %v, want %v", tt.name, got, tt.onInstall)
		}
		if got := Runs(tt.events, upgrade); got != tt.onUpgrade {
			t.Errorf("%s on an upgrade: %v, want %v", tt.name, got, tt.onUpgrade)
		}
	}
}

// Decide runs each hook once per revision, with Helm's delete policies.
func TestDecide(t *testing.T) {
	const rev = "2"
	bhc := []helmrelease.HookDeletePolicy{helmrelease.HookBeforeHookCreation}
	succ := []helmrelease.HookDeletePolicy{helmrelease.HookSucceeded}
	fail := []helmrelease.HookDeletePolicy{helmrelease.HookFailed}
	tests := []struct {
		name     string
		stored   Phase
		policies []helmrelease.HookDeletePolicy
		live     Live
		want     Decision
	}{
		{"not there: created", "", nil, Live{}, Decision{Apply, Running}},
		{"an older run, no policy (before-hook-creation): deleted first", "", nil, Live{Exists: true, Revision: "1", Ready: true}, Decision{Delete, ""}},
		{"an older run without Loom's mark: deleted first", "", bhc, Live{Exists: true, Ready: true}, Decision{Delete, ""}},
		{"the older run being deleted: wait", "", nil, Live{Exists: true, Terminating: true, Revision: "1"}, Decision{Leave, ""}},
		{"an older run, hook-succeeded only: applied over", "", succ, Live{Exists: true, Revision: "1"}, Decision{Apply, Running}},
		{"this revision's run, record lagging: running", "", nil, Live{Exists: true, Revision: rev}, Decision{Leave, Running}},
		{"running", Running, nil, Live{Exists: true, Revision: rev}, Decision{Leave, Running}},
		{"complete: succeeded, kept", Running, nil, Live{Exists: true, Revision: rev, Ready: true}, Decision{Leave, Succeeded}},
		{"complete, hook-succeeded, not recorded yet: kept until it is", Running, succ, Live{Exists: true, Revision: rev, Ready: true}, Decision{Leave, Succeeded}},
		{"complete, hook-succeeded, recorded: deleted", Succeeded, succ, Live{Exists: true, Revision: rev, Ready: true}, Decision{Delete, Succeeded}},
		{"failed: kept, not run again", Running, nil, Live{Exists: true, Revision: rev, Failed: true}, Decision{Leave, Failed}},
		{"failed, hook-failed, recorded: deleted", Failed, fail, Live{Exists: true, Revision: rev, Failed: true}, Decision{Delete, Failed}},
		{"failed, hook-succeeded: kept", Failed, succ, Live{Exists: true, Revision: rev, Failed: true}, Decision{Leave, Failed}},
		{"TTL controller deleted it after it succeeded: never again", Succeeded, nil, Live{}, Decision{Leave, Succeeded}},
		{"gone before Loom saw it finish: deleted, done, never again", Running, nil, Live{}, Decision{Leave, Deleted}},
		{"deleted by its policy: never again", Succeeded, succ, Live{}, Decision{Leave, Succeeded}},
		{"failed and gone: not again in this revision", Failed, fail, Live{}, Decision{Leave, Failed}},
		{"recorded, then replaced by another's object: left alone", Succeeded, nil, Live{Exists: true, Revision: "1"}, Decision{Leave, Succeeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Decide(rev, tt.stored, tt.policies, tt.live)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

// A Record survives its trip through the parent's status.
func TestRecordRoundTrip(t *testing.T) {
	rec := Record{Revision: 3, Digest: "abc"}.
		With(Key{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate"}, Running).
		With(Key{Kind: "ConfigMap", Namespace: "ns", Name: "a"}, Succeeded)
	got, err := RecordOf(map[string]any{StatusField: rec.Map()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if p := got.Phase(Key{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate"}); p != Running {
		t.Errorf("Phase = %q", p)
	}
	if _, err := RecordOf(map[string]any{StatusField: map[string]any{"revision": "x"}}); err == nil {
		t.Error("a record that does not decode gave no error")
	}
}
