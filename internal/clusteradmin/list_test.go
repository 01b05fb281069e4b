package clusteradmin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/cluster"
)

// secretList turns an inline YAML list of Secrets into corev1.Secrets.
func secretList(t *testing.T, doc string) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	if err := yaml.UnmarshalStrict([]byte(doc), &list); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return list.Items
}

// List reads the Secrets as Loom does: a registration is probed, a Secret
// Loom would not use (invalid, or one of two registering a name) is a row
// with the reason and is not probed, and a Secret that registers nothing
// is left out.
func TestListRegistrations(t *testing.T) {
	secrets := secretList(t, `
items:
- metadata: {name: w2, namespace: loom-system, labels: {loom.dev/cluster: w2, env: prod}}
  data: {kubeconfig: S0M=}
- metadata: {name: c1-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: c1}}
  type: cluster.x-k8s.io/secret
  data: {value: S0M=}
- metadata: {name: c1-ca, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: c1}}
  type: cluster.x-k8s.io/secret
  data: {tls.crt: Q0E=}
- metadata: {name: empty, namespace: loom-system, labels: {loom.dev/cluster: empty}}
- metadata: {name: dup, namespace: loom-system, labels: {loom.dev/cluster: dup}}
  data: {kubeconfig: S0M=}
- metadata: {name: dup-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: dup}}
  type: cluster.x-k8s.io/secret
  data: {value: S0M=}
`)
	type row struct {
		Name, Source, Secret, Error string
		Probed                      bool
	}
	want := []row{
		{Name: "c1", Source: "cluster-api", Secret: "loom-system/c1-kubeconfig", Probed: true},
		{Name: "dup", Source: "loom", Secret: "loom-system/dup",
			Error: "invalid cluster registration: cluster dup is registered by more than one Secret: loom-system/dup, loom-system/dup-kubeconfig; Loom uses neither"},
		{Name: "dup", Source: "cluster-api", Secret: "loom-system/dup-kubeconfig",
			Error: "invalid cluster registration: cluster dup is registered by more than one Secret: loom-system/dup, loom-system/dup-kubeconfig; Loom uses neither"},
		{Name: "empty", Source: "loom", Secret: "loom-system/empty",
			Error: `invalid cluster registration: cluster empty (Secret loom-system/empty): no kubeconfig under key "kubeconfig"`},
		{Name: "w2", Source: "loom", Secret: "loom-system/w2", Probed: true},
	}
	var got []row
	for _, it := range List(secrets, "loom-system") {
		got = append(got, row{Name: it.Row.Name, Source: string(it.Row.Source), Secret: it.Row.Secret, Error: it.Row.Error, Probed: it.Used})
		if it.Used && it.Reg.Name != it.Row.Name {
			t.Errorf("row %s probes registration %s", it.Row.Name, it.Reg.Name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List() (-want +got):\n%s", diff)
	}
}

// The clusters are probed at once: each probe here returns only when all
// are in flight, so probing one after another would never finish (the
// test's context ends the wait, and the test fails).
func TestProbeAllAtOnce(t *testing.T) {
	const n = 4
	var items []Listed
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		items = append(items, Listed{Row: Row{Name: name}, Reg: cluster.Registration{Name: name}, Used: true})
	}
	items = append(items, Listed{Row: Row{Name: "bad", Error: "invalid"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	started, all := 0, make(chan struct{})
	probe := func(ctx context.Context, reg cluster.Registration) (string, error) {
		mu.Lock()
		if started++; started == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if reg.Name == "w2" {
			return "", fmt.Errorf("refused")
		}
		return "v1.36." + reg.Name[1:], nil
	}
	rows := ProbeAll(ctx, items, probe)
	want := []Row{
		{Name: "w0", Reachable: true, Version: "v1.36.0"},
		{Name: "w1", Reachable: true, Version: "v1.36.1"},
		{Name: "w2", Error: "refused"},
		{Name: "w3", Reachable: true, Version: "v1.36.3"},
		{Name: "bad", Error: "invalid"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ProbeAll() (-want +got):\n%s", diff)
	}
}

// registrationFor is a registration of a cluster at server, with a token.
func registrationFor(server string) cluster.Registration {
	return cluster.Registration{Name: "w1", Source: cluster.SourceLoom, Kubeconfig: []byte(`apiVersion: v1
kind: Config
clusters: [{name: w1, cluster: {server: "` + server + `", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: t0k3n}}]
contexts: [{name: w1, context: {cluster: w1, user: admin}}]
current-context: w1
`)}
}

// The probe asks GET /version with the registration's credentials and
// reads the version; a server that accepts the connection and never
// answers is given up on at the deadline, with an error that says so; a
// refused kubeconfig is not sent at all.
func TestProbe(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" || r.Header.Get("Authorization") != "Bearer t0k3n" {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
	}))
	defer srv.Close()
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() { // accepts, and never answers
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	p := Prober{Timeout: 200 * time.Millisecond}
	tests := []struct {
		name        string
		reg         cluster.Registration
		wantVersion string
		wantErr     []string // substrings of the error, any of them; nil: none
	}{
		{name: "answers", reg: registrationFor(srv.URL), wantVersion: "v1.36.3"},
		{name: "wrong token", reg: func() cluster.Registration {
			r := registrationFor(srv.URL)
			r.Kubeconfig = []byte(strings.Replace(string(r.Kubeconfig), "t0k3n", "wrong", 1))
			return r
		}(), wantErr: []string{"the server has asked for the client to provide credentials"}},
		{name: "never answers", reg: registrationFor("https://" + hung.Addr().String()), wantErr: []string{"no answer within 200ms: "}},
		{name: "exec refused", reg: func() cluster.Registration {
			r := registrationFor(srv.URL)
			r.Kubeconfig = []byte(strings.Replace(string(r.Kubeconfig), "{token: t0k3n}", "{exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Never}}", 1))
			return r
		}(), wantErr: []string{"runs exec credential plugin \"aws\"; start Loom with --allow-kubeconfig-exec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := p.Probe(context.Background(), tt.reg)
			if tt.wantErr == nil {
				if err != nil || v != tt.wantVersion {
					t.Fatalf("Probe() = %q, %v, want %q", v, err, tt.wantVersion)
				}
				return
			}
			if err == nil {
				t.Fatalf("Probe() = %q, want an error", v)
			}
			found := false
			for _, s := range tt.wantErr {
				found = found || strings.Contains(err.Error(), s)
			}
			if !found {
				t.Errorf("Probe() error = %q, want one that says one of %q", err, tt.wantErr)
			}
		})
	}
}
