package certs

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"time"
)

// Backdate is how far before its issue a certificate's NotBefore is set,
// so that an API server whose clock is a little behind Loom's accepts it
// at once. A certificate's issue time is NotBefore + Backdate.
const Backdate = time.Minute

// Lifetimes are how long Loom's certificates live, and how long a new CA
// sits in the caBundle before a serving certificate it signed is served.
type Lifetimes struct {
	// CA is the CA's lifetime; a new CA joins the bundle at 2/3 of it.
	CA time.Duration
	// Serving is the serving certificate's lifetime (at most its CA's
	// remaining life); it is reissued at 2/3 of it.
	Serving time.Duration
	// Propagation is how long a new CA is in the caBundle of every CRD
	// before a serving certificate it signed is made: the time every API
	// server takes to see the CRD change.
	Propagation time.Duration
}

// Hosts are the names the serving certificate is valid for: the API
// server checks the one in the CRD's clientConfig (the URL's host, or the
// Service's DNS name).
type Hosts struct {
	DNS []string
	IPs []net.IP
}

// State is what the Secret holds: the CAs trusted (the caBundle), the
// newest first, whose key signs; and the serving certificate.
type State struct {
	// CAs are the trusted CAs, newest first: CAs[0] signs.
	CAs []*x509.Certificate
	// CAKey is CAs[0]'s private key.
	CAKey crypto.Signer
	// Serving is the serving certificate (nil: none yet).
	Serving *x509.Certificate
	// ServingKey is Serving's private key.
	ServingKey crypto.Signer
}

// Action is what Plan says to do.
type Action string

// The actions, in the order Plan considers them.
const (
	// None: nothing is due.
	None Action = "None"
	// Create a new CA and serving certificate; the bundle is the new CA
	// alone. There is no usable CA: none yet, or it expired.
	Create Action = "Create"
	// Drop the CAs past their NotAfter from the bundle: no certificate
	// they signed is valid any more.
	Drop Action = "Drop"
	// AddCA makes a new CA, which signs from now on, first in the bundle;
	// the old CA stays, and so does the serving certificate it signed.
	AddCA Action = "AddCA"
	// Reissue makes a new serving certificate, signed by CAs[0].
	Reissue Action = "Reissue"
)

// Decision is Plan's answer: the action, why, and when to ask again
// if the action is None (the zero time: no deadline of its own).
type Decision struct {
	Action Action
	Reason string
	Next   time.Time
}

// issued is when c was issued: its NotBefore + Backdate.
func issued(c *x509.Certificate) time.Time { return c.NotBefore.Add(Backdate) }

// rotateAt is 2/3 of the way from c's issue to its NotAfter.
func rotateAt(c *x509.Certificate) time.Time {
	from := issued(c)
	return from.Add(c.NotAfter.Sub(from) * 2 / 3)
}

// Plan decides, at now, what the rotation loop does to s (nil: no Secret
// yet or unreadable). injected says that CAs[0] is in the caBundle of
// every CRD Loom injects. It is pure: one step at a time, the loop writes
// the Secret and injects after each, then asks again.
//
// The serving certificate moves to a new CA only when that CA has been
// injected and propagated, and the old CA stays in the bundle until its
// NotAfter, which no certificate it signed outlives: at no point is a
// certificate served that the API server does not trust.
func Plan(now time.Time, s *State, l Lifetimes, h Hosts, injected bool) Decision {
	if s == nil || len(s.CAs) == 0 || s.CAKey == nil {
		return Decision{Action: Create, Reason: "no CA yet"}
	}
	ca := s.CAs[0]
	if !now.Before(ca.NotAfter) {
		return Decision{Action: Create, Reason: fmt.Sprintf("the CA expired at %s", ca.NotAfter.UTC().Format(time.RFC3339))}
	}
	next := rotateAt(ca)
	for _, old := range s.CAs[1:] {
		if !now.Before(old.NotAfter) {
			return Decision{Action: Drop, Reason: fmt.Sprintf("an old CA expired at %s", old.NotAfter.UTC().Format(time.RFC3339))}
		}
		next = earliest(next, old.NotAfter)
	}
	if !now.Before(rotateAt(ca)) {
		return Decision{Action: AddCA, Reason: fmt.Sprintf("the CA is 2/3 through its life (it expires at %s)", ca.NotAfter.UTC().Format(time.RFC3339))}
	}
	srv := s.Serving
	switch {
	case srv == nil || s.ServingKey == nil:
		return Decision{Action: Reissue, Reason: "no serving certificate yet"}
	case !now.Before(srv.NotAfter):
		return Decision{Action: Reissue, Reason: "the serving certificate expired"}
	case !covers(srv, h):
		return Decision{Action: Reissue, Reason: "the serving certificate's names are not the webhook's"}
	case !signedBy(srv, ca):
		propagated := issued(ca).Add(l.Propagation)
		if injected && !now.Before(propagated) {
			return Decision{Action: Reissue, Reason: "a new CA is in every CRD's caBundle: the serving certificate moves to it"}
		}
		next = earliest(next, propagated)
	case !now.Before(rotateAt(srv)):
		return Decision{Action: Reissue, Reason: "the serving certificate is 2/3 through its life"}
	}
	return Decision{Action: None, Next: earliest(next, rotateAt(srv))}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// signedBy reports whether c was signed by ca's key.
func signedBy(c, ca *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, ca.RawSubject) && c.CheckSignatureFrom(ca) == nil
}

// covers reports whether c names exactly h's hosts.
func covers(c *x509.Certificate, h Hosts) bool {
	if !slices.Equal(c.DNSNames, h.DNS) || len(c.IPAddresses) != len(h.IPs) {
		return false
	}
	for i, ip := range h.IPs {
		if !c.IPAddresses[i].Equal(ip) {
			return false
		}
	}
	return true
}

// Valid reports whether s's serving certificate may be served at now:
// issued, not expired, and signed by a CA of the bundle.
func (s *State) Valid(now time.Time) bool {
	if s == nil || s.Serving == nil || now.Before(s.Serving.NotBefore) || !now.Before(s.Serving.NotAfter) {
		return false
	}
	for _, ca := range s.CAs {
		if signedBy(s.Serving, ca) {
			return true
		}
	}
	return false
}
