package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// Do carries out the action d on s at now, and returns the new state; s is
// not changed. It makes keys (ECDSA P-256) and certificates, and reads no
// clock.
func Do(now time.Time, s *State, a Action, l Lifetimes, h Hosts) (*State, error) {
	out := &State{}
	if s != nil {
		*out = *s
		out.CAs = append([]*x509.Certificate(nil), s.CAs...)
	}
	switch a {
	case None:
		return out, nil
	case Create:
		ca, key, err := newCA(now, l.CA)
		if err != nil {
			return nil, err
		}
		out.CAs, out.CAKey = []*x509.Certificate{ca}, key
		return reissue(now, out, l, h)
	case Drop:
		kept := out.CAs[:1]
		for _, ca := range out.CAs[1:] {
			if now.Before(ca.NotAfter) {
				kept = append(kept, ca)
			}
		}
		out.CAs = kept
		return out, nil
	case AddCA:
		ca, key, err := newCA(now, l.CA)
		if err != nil {
			return nil, err
		}
		out.CAs, out.CAKey = append([]*x509.Certificate{ca}, out.CAs...), key
		return out, nil
	case Reissue:
		return reissue(now, out, l, h)
	}
	return nil, fmt.Errorf("unknown action %q", a)
}

// newCA makes a self-signed CA that lives life from now.
func newCA(now time.Time, life time.Duration) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("make the webhook CA's key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("loom-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	ca, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return nil, nil, fmt.Errorf("make the webhook CA: %w", err)
	}
	return ca, key, nil
}

// reissue gives s a new serving certificate for h, signed by CAs[0], that
// lives l.Serving from now or until the CA expires.
func reissue(now time.Time, s *State, l Lifetimes, h Hosts) (*State, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the webhook serving key: %w", err)
	}
	ca := s.CAs[0]
	cn := "loom-webhook"
	if len(h.DNS) > 0 {
		cn = h.DNS[0]
	} else if len(h.IPs) > 0 {
		cn = h.IPs[0].String()
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		NotBefore:   now.Add(-Backdate),
		NotAfter:    earliest(now.Add(l.Serving), ca.NotAfter),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    h.DNS,
		IPAddresses: h.IPs,
	}
	crt, err := sign(tmpl, ca, key, s.CAKey)
	if err != nil {
		return nil, fmt.Errorf("make the webhook serving certificate: %w", err)
	}
	s.Serving, s.ServingKey = crt, key
	return s, nil
}

// sign makes tmpl, for key's public key, signed by parent's key.
func sign(tmpl, parent *x509.Certificate, key, parentKey crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1))
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}
