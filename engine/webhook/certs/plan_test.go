package certs

import (
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	life  = Lifetimes{CA: 90 * time.Minute, Serving: 30 * time.Minute, Propagation: time.Minute}
	local = Hosts{IPs: []net.IP{net.ParseIP("127.0.0.1")}}
)

// do runs Do or fails the test.
func do(t *testing.T, now time.Time, s *State, a Action, h Hosts) *State {
	t.Helper()
	out, err := Do(now, s, a, life, h)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlan(t *testing.T) {
	fresh := do(t, t0, nil, Create, local)
	// Reissued at 50m, it lives until 80m.
	reissued := do(t, t0.Add(50*time.Minute), fresh, Reissue, local)
	// At 60m the CA is 2/3 through: a new CA joins, the serving
	// certificate is still the old CA's.
	added := do(t, t0.Add(60*time.Minute), reissued, AddCA, local)
	// At 61m it moved to the new CA.
	moved := do(t, t0.Add(61*time.Minute), added, Reissue, local)
	unreadable := &State{CAs: fresh.CAs}
	tests := []struct {
		name     string
		now      time.Duration
		s        *State
		hosts    Hosts
		injected bool
		want     Action
		reason   string
		next     time.Duration
	}{
		{name: "no Secret", s: nil, want: Create, reason: "no CA yet"},
		{name: "no CA key", s: unreadable, want: Create, reason: "no CA yet"},
		{name: "fresh", now: time.Minute, s: fresh, injected: true, want: None, next: 20 * time.Minute},
		{name: "serving 2/3 through", now: 20 * time.Minute, s: fresh, injected: true, want: Reissue, reason: "2/3 through its life"},
		{name: "serving expired", now: 31 * time.Minute, s: fresh, injected: true, want: Reissue, reason: "expired"},
		{name: "other hosts", now: time.Minute, s: fresh, hosts: Hosts{DNS: []string{"loom-webhook.loom-system.svc"}}, injected: true, want: Reissue, reason: "names"},
		{name: "no serving certificate", now: time.Minute, s: &State{CAs: fresh.CAs, CAKey: fresh.CAKey}, want: Reissue, reason: "no serving"},
		{name: "CA 2/3 through", now: 60 * time.Minute, s: reissued, injected: true, want: AddCA, reason: "CA is 2/3"},
		{name: "new CA not injected yet", now: 61 * time.Minute, s: added, injected: false, want: None, next: 61 * time.Minute},
		{name: "new CA injected, not propagated", now: 60*time.Minute + 30*time.Second, s: added, injected: true, want: None, next: 61 * time.Minute},
		{name: "new CA injected and propagated", now: 61 * time.Minute, s: added, injected: true, want: Reissue, reason: "moves to it"},
		{name: "old CA kept until it expires", now: 70 * time.Minute, s: moved, injected: true, want: None, next: 81 * time.Minute},
		{name: "old CA expired", now: 90 * time.Minute, s: moved, injected: true, want: Drop, reason: "old CA expired"},
		{name: "CA expired", now: 90 * time.Minute, s: reissued, injected: true, want: Create, reason: "the CA expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := local
			if tt.hosts.DNS != nil {
				h = tt.hosts
			}
			d := Plan(t0.Add(tt.now), tt.s, life, h, tt.injected)
			if d.Action != tt.want || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("Plan = %s (%q), want %s (%q)", d.Action, d.Reason, tt.want, tt.reason)
			}
			if tt.next != 0 && !d.Next.Equal(t0.Add(tt.next)) {
				t.Errorf("Next = %s, want t0+%s", d.Next.Sub(t0), tt.next)
			}
		})
	}
}

// TestRotationNeverServesUntrusted runs the loop as the Rotator does, for
// five CA lifetimes in steps of 10s, with the injection one step behind the
// Secret's writes (and failing for 5 minutes around the first CA rotation)
// and a replica still serving the previous serving
// certificate for one step: at every step, every certificate served is
// valid and signed by a CA of the bundle the API server has.
func TestRotationNeverServesUntrusted(t *testing.T) {
	const step = 10 * time.Second
	var (
		s        *State
		injected []*x509.Certificate // the bundle the API server has
		pending  []*x509.Certificate // the bundle written, injected next step
		previous *x509.Certificate   // what a lagging replica serves
		actions  = map[Action]int{}
	)
	trusted := func(c *x509.Certificate, now time.Time) bool {
		if now.Before(c.NotBefore) || !now.Before(c.NotAfter) {
			return false
		}
		for _, ca := range injected {
			if signedBy(c, ca) && now.Before(ca.NotAfter) {
				return true
			}
		}
		return false
	}
	for now := t0; now.Before(t0.Add(5 * life.CA)); now = now.Add(step) {
		// The CRDs cannot be patched around the first CA rotation.
		down := !now.Before(t0.Add(60*time.Minute)) && now.Before(t0.Add(65*time.Minute))
		if pending != nil && !down {
			injected = mergeBundle(pending, injected, now)
		}
		in := s != nil && contains(injected, s.CAs[0])
		d := Plan(now, s, life, local, in)
		actions[d.Action]++
		if d.Action != None {
			if s != nil {
				previous = s.Serving
			}
			s = do(t, now, s, d.Action, local)
			pending = s.CAs
			if d.Action == Create {
				// Nothing was served before the first certificate.
				injected = s.CAs
			}
		}
		served := []*x509.Certificate{s.Serving}
		if d.Action != None && previous != nil {
			served = append(served, previous)
		}
		for _, c := range served {
			if !trusted(c, now) {
				t.Fatalf("at t0+%s after %s: a served certificate (serial %v, signed by %s) is not trusted by the injected bundle",
					now.Sub(t0), d.Action, c.SerialNumber, c.Issuer.CommonName)
			}
		}
	}
	if actions[Create] != 1 || actions[AddCA] < 6 || actions[Drop] < 5 || actions[Reissue] < 20 {
		t.Errorf("actions %v: want one Create, and AddCA, Drop and Reissue all along", actions)
	}
}
