package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// Server is the conversion webhook's HTTPS server.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen listens on addr with TLS, taking the certificate of each
// handshake from cert (nil until one exists: the handshake fails), so that
// a rotated certificate is served without a restart. It does not serve
// until Serve.
func Listen(addr string, handler http.Handler, cert func() *tls.Certificate) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook listener: %w", err)
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := cert(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate yet")
		},
	}
	srv := &http.Server{Handler: handler, TLSConfig: cfg, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 90 * time.Second}
	return &Server{srv: srv, ln: tls.NewListener(ln, cfg)}, nil
}

// Addr is the address it listens on (the port chosen for ":0").
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx is done, then stops, letting the reviews in
// flight finish for up to grace.
func (s *Server) Serve(ctx context.Context, grace time.Duration) error {
	s.srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("conversion webhook: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		klog.FromContext(ctx).Info("Conversion webhook stopped before its reviews in flight finished", "err", err.Error())
	}
	return nil
}
