package certs

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The Secret's keys, beside tls.crt and tls.key (the serving certificate
// and key, as in every kubernetes.io/tls Secret).
const (
	// KeyCABundle holds the trusted CAs, newest first: the caBundle
	// injected into the CRDs.
	KeyCABundle = "ca.crt"
	// KeyCAKey holds the newest CA's key.
	KeyCAKey = "ca.key"
)

// Encode returns s as the Secret's data.
func (s *State) Encode() (map[string][]byte, error) {
	bundle, err := cert.EncodeCertificates(s.CAs...)
	if err != nil {
		return nil, err
	}
	caKey, err := keyutil.MarshalPrivateKeyToPEM(s.CAKey)
	if err != nil {
		return nil, fmt.Errorf("encode the CA's key: %w", err)
	}
	crt, err := cert.EncodeCertificates(s.Serving)
	if err != nil {
		return nil, err
	}
	key, err := keyutil.MarshalPrivateKeyToPEM(s.ServingKey)
	if err != nil {
		return nil, fmt.Errorf("encode the serving key: %w", err)
	}
	return map[string][]byte{KeyCABundle: bundle, KeyCAKey: caKey, corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}, nil
}

// Decode reads the Secret's data. A missing or unreadable CA is an error
// (the loop then starts afresh: Plan(nil) says Create); a missing or
// unreadable serving certificate leaves Serving nil (Plan says Reissue).
func Decode(data map[string][]byte) (*State, error) {
	cas, err := cert.ParseCertsPEM(data[KeyCABundle])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", KeyCABundle, err)
	}
	caKey, err := signer(data[KeyCAKey])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", KeyCAKey, err)
	}
	if !publicKeyOf(cas[0], caKey) {
		return nil, fmt.Errorf("%s is not the key of the first CA of %s", KeyCAKey, KeyCABundle)
	}
	s := &State{CAs: cas, CAKey: caKey}
	crts, err := cert.ParseCertsPEM(data[corev1.TLSCertKey])
	if err != nil {
		return s, nil
	}
	key, err := signer(data[corev1.TLSPrivateKeyKey])
	if err != nil || !publicKeyOf(crts[0], key) {
		return s, nil
	}
	s.Serving, s.ServingKey = crts[0], key
	return s, nil
}

// signer parses a PEM private key.
func signer(pem []byte) (crypto.Signer, error) {
	k, err := keyutil.ParsePrivateKeyPEM(pem)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("not a signing key")
	}
	return s, nil
}

// publicKeyOf reports whether key is c's.
func publicKeyOf(c *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(c.PublicKey)
}

// TLSCertificate is s's serving certificate as crypto/tls serves it, or
// nil when it has none.
func (s *State) TLSCertificate() *tls.Certificate {
	if s == nil || s.Serving == nil {
		return nil
	}
	return &tls.Certificate{Certificate: [][]byte{s.Serving.Raw}, PrivateKey: s.ServingKey, Leaf: s.Serving}
}

// Bundle is the caBundle: the trusted CAs as PEM, newest first.
func (s *State) Bundle() []byte {
	b, _ := cert.EncodeCertificates(s.CAs...)
	return b
}
