package certs

import (
	"crypto/x509"
	"time"

	"k8s.io/client-go/util/cert"
)

// mergeBundle is the caBundle to inject where live is: the Secret's CAs,
// then those of live that are still valid at now and not the Secret's. A
// replica that read an older Secret never takes a newer CA out of a CRD,
// and a CA leaves a CRD only once it expired (Plan drops none earlier).
func mergeBundle(secret, live []*x509.Certificate, now time.Time) []*x509.Certificate {
	out := append([]*x509.Certificate(nil), secret...)
	for _, c := range live {
		if now.Before(c.NotAfter) && !contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// contains reports whether bundle holds ca.
func contains(bundle []*x509.Certificate, ca *x509.Certificate) bool {
	for _, c := range bundle {
		if c.Equal(ca) {
			return true
		}
	}
	return false
}

// MergeBundle is mergeBundle over PEM: secret's CAs, then live's (a CRD's
// caBundle, maybe empty or unreadable) that are valid at now.
func MergeBundle(secret, live []byte, now time.Time) ([]byte, error) {
	s, err := cert.ParseCertsPEM(secret)
	if err != nil {
		return nil, err
	}
	l, err := cert.ParseCertsPEM(live)
	if err != nil {
		l = nil // an empty or broken caBundle holds nothing to keep
	}
	return cert.EncodeCertificates(mergeBundle(s, l, now)...)
}
