package reader

import (
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/loom-operator/loom/engine/chart"
)

// capsTTL is how long the cluster's capabilities are kept before
// discovery is read again.
const capsTTL = 30 * time.Second

// Capabilities is what a chart's .Capabilities holds on this cluster, read
// from discovery at most every capsTTL. It never loses an API version to
// a failure: when discovery fails it keeps what it had, and when one
// group's discovery fails (an aggregated API that is down) it keeps that
// group's versions from before. Otherwise a chart that renders an object
// only when its API is served would see it vanish for a moment, and Loom
// would prune the object.
type Capabilities struct {
	dc   discovery.DiscoveryInterface
	mu   sync.Mutex
	caps *chart.Capabilities
	read time.Time
}

// NewCapabilities returns the capabilities of the cluster dc discovers,
// read on first use.
func NewCapabilities(dc discovery.DiscoveryInterface) *Capabilities {
	return &Capabilities{dc: dc}
}

// Get returns the capabilities, reading discovery when they are older
// than capsTTL.
func (c *Capabilities) Get() (*chart.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps != nil && time.Since(c.read) < capsTTL {
		return c.caps, nil
	}
	next, partial, err := chart.FromDiscovery(c.dc)
	switch {
	case err != nil && c.caps != nil:
		c.read = time.Now() // try again after capsTTL
		return c.caps, nil
	case err != nil:
		return nil, err
	case partial && c.caps != nil:
		for _, v := range c.caps.APIVersions {
			if !slices.Contains(next.APIVersions, v) {
				next.APIVersions = append(next.APIVersions, v)
			}
		}
		slices.Sort(next.APIVersions)
	}
	c.caps, c.read = next, time.Now()
	return c.caps, nil
}
