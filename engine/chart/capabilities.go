package chart

import (
	"fmt"
	"path"
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/client-go/discovery"
)

// Capabilities is what .Capabilities holds: the Kubernetes version and
// the API versions the cluster serves.
type Capabilities = common.Capabilities

// CapabilitiesWith are Helm's defaults with kubeVersion (when not "") and
// extra API versions added, as `helm template --kube-version
// --api-versions` makes them.
func CapabilitiesWith(kubeVersion string, apiVersions []string) (*Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if kubeVersion != "" {
		kv, err := common.ParseKubeVersion(kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kube version %q: %w", kubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(slices.Clone(caps.APIVersions), apiVersions...)
	return caps, nil
}

// FromDiscovery reads a cluster's capabilities. partial is true when a
// group's discovery failed: the capabilities lack that group.
func FromDiscovery(dc discovery.DiscoveryInterface) (caps *Capabilities, partial bool, err error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, false, fmt.Errorf("server version: %w", err)
	}
	kv, err := common.ParseKubeVersion(v.GitVersion)
	if err != nil {
		return nil, false, fmt.Errorf("server version %q: %w", v.GitVersion, err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, false, fmt.Errorf("API versions: %w", err)
	}
	partial = err != nil
	seen := map[string]bool{}
	var set common.VersionSet
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			set = append(set, s)
		}
	}
	for _, g := range groups {
		for _, gv := range g.Versions {
			add(gv.GroupVersion)
		}
	}
	for _, r := range resources {
		for _, res := range r.APIResources {
			add(path.Join(r.GroupVersion, res.Kind))
		}
	}
	slices.Sort(set)
	return &Capabilities{KubeVersion: *kv, APIVersions: set, HelmVersion: common.DefaultCapabilities.HelmVersion}, partial, nil
}
