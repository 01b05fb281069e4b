package reader

import (
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubetesting "k8s.io/client-go/testing"
)

// stubDiscovery answers discovery with what the test sets.
type stubDiscovery struct {
	*fakediscovery.FakeDiscovery
	groups []string // group/versions served
	failed []string // group/versions whose discovery fails
	err    error    // discovery fails altogether
}

func (d *stubDiscovery) ServerVersion() (*version.Info, error) {
	if d.err != nil {
		return nil, d.err
	}
	return &version.Info{GitVersion: "v1.36.2", Major: "1", Minor: "36"}, nil
}

func (d *stubDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	if d.err != nil {
		return nil, nil, d.err
	}
	var groups []*metav1.APIGroup
	var lists []*metav1.APIResourceList
	for _, gv := range d.groups {
		groups = append(groups, &metav1.APIGroup{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: gv}}})
		lists = append(lists, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Kind: "Thing"}}})
	}
	if len(d.failed) > 0 {
		failed := map[schema.GroupVersion]error{}
		for _, gv := range d.failed {
			failed[schema.GroupVersion{Group: gv}] = errors.New("unavailable")
		}
		return groups, lists, &discovery.ErrGroupDiscoveryFailed{Groups: failed}
	}
	return groups, lists, nil
}

// The capabilities never lose an API version to a failure of discovery:
// a chart that renders an object only when its API is served must not
// see it vanish for a moment, or Loom would prune the object.
func TestCapabilitiesKeepWhatAFailureHides(t *testing.T) {
	d := &stubDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}, groups: []string{"v1", "monitoring.coreos.com/v1"}}
	c := NewCapabilities(d)
	has := func(v string) bool {
		t.Helper()
		caps, err := c.Get()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(caps.APIVersions, v)
	}
	if !has("monitoring.coreos.com/v1") || !has("monitoring.coreos.com/v1/Thing") {
		t.Fatal("the served group is missing")
	}
	if caps, _ := c.Get(); caps.KubeVersion.Version != "v1.36.2" {
		t.Errorf("kube version %q, want the server's", caps.KubeVersion.Version)
	}
	// The group's discovery fails: its versions stay.
	d.groups, d.failed = []string{"v1"}, []string{"monitoring.coreos.com"}
	c.read = time.Time{}
	if !has("monitoring.coreos.com/v1") {
		t.Error("a group whose discovery failed was dropped")
	}
	// Discovery fails altogether: the last capabilities stay.
	d.err = errors.New("connection refused")
	c.read = time.Time{}
	if !has("monitoring.coreos.com/v1") {
		t.Error("a failed discovery dropped the capabilities")
	}
	// The group is really gone (its CRD deleted): it goes.
	d.err, d.failed = nil, nil
	c.read = time.Time{}
	if has("monitoring.coreos.com/v1") {
		t.Error("a group the server no longer serves is kept")
	}
	// No capabilities yet and discovery fails: an error, retried, never
	// Helm's defaults (which could render other children).
	if _, err := NewCapabilities(&stubDiscovery{err: errors.New("down")}).Get(); err == nil {
		t.Error("no error without capabilities")
	}
}
