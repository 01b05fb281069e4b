package clusteradmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/loom-operator/loom/engine/cluster"
)

// Row is one registration as loom cluster list reports it.
type Row struct {
	// Name is the cluster's name (as the Secret says it, even if it is not
	// a valid one).
	Name string `json:"name"`
	// Source is how it is registered: loom or cluster-api.
	Source cluster.Source `json:"source"`
	// Secret is the registration's Secret, namespace/name.
	Secret string `json:"secret"`
	// Labels are the Secret's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Reachable is whether the cluster's API server answered /version
	// with the registration's credentials within the deadline.
	Reachable bool `json:"reachable"`
	// Version is the API server's gitVersion, when it answered.
	Version string `json:"version,omitempty"`
	// Error says why the cluster is not reachable, or why the Secret is
	// not a registration Loom uses (then it is not probed).
	Error string `json:"error,omitempty"`
}

// Listed is a Row and, if Loom uses it, the registration to probe.
type Listed struct {
	Row Row
	// Reg is the registration, when Used.
	Reg cluster.Registration
	// Used says that Loom uses Reg, and so that it is probed.
	Used bool
}

// Secrets lists the Secrets of Loom's namespace ns that may register a
// cluster: those labelled cluster.LabelCluster and those of Cluster API's
// type, each once.
func Secrets(ctx context.Context, secrets corev1client.SecretInterface, ns string) ([]corev1.Secret, error) {
	labelled, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: cluster.LabelCluster})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets labelled %s in namespace %s: %w", cluster.LabelCluster, ns, err)
	}
	capi, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(cluster.SecretTypeClusterAPI)})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets of type %s in namespace %s: %w", cluster.SecretTypeClusterAPI, ns, err)
	}
	out := labelled.Items
	for _, s := range capi.Items {
		if _, dup := s.Labels[cluster.LabelCluster]; !dup {
			out = append(out, s)
		}
	}
	return out, nil
}

// List reads each Secret as Loom's controller reads it
// (cluster.FromSecret, then cluster.Index): a Secret that registers no
// cluster is left out, one that Loom would not use is a row with the
// reason and nothing to probe. Rows are sorted by name, then Secret.
func List(secrets []corev1.Secret, ns string) []Listed {
	var items []Listed
	var regs []cluster.Registration
	for i := range secrets {
		s := &secrets[i]
		reg, ok, err := cluster.FromSecret(s, ns)
		row := Row{Secret: s.Namespace + "/" + s.Name, Labels: s.Labels}
		switch {
		case err != nil:
			row.Name, row.Source = s.Labels[cluster.LabelCluster], cluster.SourceLoom
			if _, labelled := s.Labels[cluster.LabelCluster]; !labelled {
				row.Name, row.Source = s.Labels[cluster.LabelClusterAPIName], cluster.SourceClusterAPI
			}
			row.Error = err.Error()
			items = append(items, Listed{Row: row})
		case ok:
			row.Name, row.Source = reg.Name, reg.Source
			regs = append(regs, reg)
			items = append(items, Listed{Row: row, Reg: reg, Used: true})
		}
	}
	// Index leaves out a name two Secrets register, and says so once.
	index, errs := cluster.Index(regs)
	for i := range items {
		if it := &items[i]; it.Used {
			if _, used := index[it.Row.Name]; !used {
				it.Used = false
				it.Row.Error = ambiguity(errs, it.Row.Name)
			}
		}
	}
	slices.SortStableFunc(items, func(a, b Listed) int {
		return strings.Compare(a.Row.Name+"\x00"+a.Row.Secret, b.Row.Name+"\x00"+b.Row.Secret)
	})
	return items
}

// ambiguity is Index's error about name.
func ambiguity(errs []error, name string) string {
	for _, err := range errs {
		if strings.Contains(err.Error(), "cluster "+name+" is registered by more than one Secret") {
			return err.Error() + "; Loom uses neither"
		}
	}
	return "not used by Loom"
}

// ProbeFunc asks a registered cluster's API server for its version.
type ProbeFunc func(ctx context.Context, reg cluster.Registration) (string, error)

// ProbeAll asks every item Loom uses for its version with probe, all at
// once, and returns the rows in items' order. probe bounds its own time.
func ProbeAll(ctx context.Context, items []Listed, probe ProbeFunc) []Row {
	rows := make([]Row, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		rows[i] = it.Row
		if !it.Used {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := probe(ctx, it.Reg)
			if err != nil {
				rows[i].Error = err.Error()
				return
			}
			rows[i].Reachable, rows[i].Version = true, v
		}()
	}
	wg.Wait()
	return rows
}

// Prober asks registered clusters for their version as Loom would reach
// them.
type Prober struct {
	// Timeout bounds each probe, from the first byte sent to the last
	// read.
	Timeout time.Duration
	// Options are what cluster.RESTConfig may accept (exec plugins).
	Options cluster.Options
}

// Probe asks reg's API server for its version (GET /version), with the
// client Loom would build from the registration, within p.Timeout. A
// deadline is an error that says "no answer within" the timeout.
func (p Prober) Probe(ctx context.Context, reg cluster.Registration) (string, error) {
	cfg, err := cluster.RESTConfig(reg, p.Options)
	if err != nil {
		return "", err
	}
	cfg.Timeout = p.Timeout
	cfg.UserAgent = "loom"
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("cluster %s: %w", reg.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	body, err := d.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return "", fmt.Errorf("no answer within %s: %w", p.Timeout, err)
	case err != nil:
		return "", err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("read /version of %s: %w", cfg.Host, err)
	}
	return info.GitVersion, nil
}
