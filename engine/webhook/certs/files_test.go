package certs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestFiles serves the certificate of a folder (cert-manager's Secret,
// mounted) and serves the next one after Load, with no restart.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(s *State) {
		data, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if err := os.WriteFile(filepath.Join(dir, k), data[k], 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := &Files{Dir: dir}
	if err := f.Load(); err == nil {
		t.Fatal("Load of an empty folder succeeded")
	}
	if f.Serving() || f.Certificate() != nil {
		t.Fatal("serving with no certificate")
	}
	now := time.Now()
	first := do(t, now, nil, Create, local)
	write(first)
	if err := f.Load(); err != nil {
		t.Fatal(err)
	}
	if !f.Serving() || !f.Certificate().Leaf.Equal(first.Serving) {
		t.Fatal("not serving the folder's certificate")
	}
	second := do(t, now, first, Reissue, local)
	write(second)
	if err := f.Load(); err != nil {
		t.Fatal(err)
	}
	if !f.Certificate().Leaf.Equal(second.Serving) {
		t.Error("not serving the renewed certificate after Load")
	}
}
