package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
)

// TestServeRotates serves over TLS and swaps the certificate between two
// requests: the second handshake gets the new one, with no restart.
func TestServeRotates(t *testing.T) {
	var current atomic.Pointer[tls.Certificate]
	pool := x509.NewCertPool()
	issue := func() *x509.Certificate {
		crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			t.Fatal(err)
		}
		// The pair's chain is the serving cert and its CA: trust the CA.
		ca, err := x509.ParseCertificate(pair.Certificate[len(pair.Certificate)-1])
		if err != nil {
			t.Fatal(err)
		}
		pool.AddCert(ca)
		current.Store(&pair)
		leaf, _ := x509.ParseCertificate(pair.Certificate[0])
		return leaf
	}
	srv, err := Listen("127.0.0.1:0", Handler(Options{Registry: NewRegistry()}), current.Load)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	url := "https://" + srv.Addr().String() + Path
	if _, err := client.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("a handshake with no certificate succeeded")
	}
	for i := range 2 {
		leaf := issue()
		resp, err := client.Post(url, "application/json", strings.NewReader(review("example.com/v1")))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(leaf.SerialNumber) != 0 {
			t.Errorf("request %d: served certificate %v, want the current one %v", i, got, leaf.SerialNumber)
		}
		if resp.StatusCode != 200 {
			t.Errorf("request %d: status %d", i, resp.StatusCode)
		}
	}
}
