package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
)

// DefaultSecret is the Secret, in Loom's namespace, that holds the
// webhook's CA and serving certificate.
const DefaultSecret = "loom-webhook-tls"

// Options configure a Rotator.
type Options struct {
	// Secrets are the Secrets of Loom's namespace.
	Secrets corev1client.SecretInterface
	// Secret is the Secret's name (DefaultSecret).
	Secret string
	// Injector puts the caBundle into the CRDs (nil: none).
	Injector *Injector
	// Lifetimes of the certificates.
	Lifetimes Lifetimes
	// Hosts the serving certificate names.
	Hosts Hosts
	// Resync is how often the Secret is read again, so that a replica
	// serves what another wrote (0: a twelfth of the serving lifetime, at
	// most a minute).
	Resync time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Rotator keeps the webhook's certificates in the Secret: it creates them
// when there are none, rotates them before they expire (Plan), and injects
// the caBundle into the CRDs. Every replica runs one on the same Secret:
// each read is followed by at most one write, made with the Secret's
// resourceVersion (or a create), so that two replicas never write over
// each other and all serve what the Secret holds.
type Rotator struct {
	o       Options
	state   atomic.Pointer[State]
	trigger chan struct{}
}

// NewRotator returns a Rotator; Run starts it.
func NewRotator(o Options) *Rotator {
	if o.Secret == "" {
		o.Secret = DefaultSecret
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Resync <= 0 {
		o.Resync = min(time.Minute, o.Lifetimes.Serving/12)
	}
	return &Rotator{o: o, trigger: make(chan struct{}, 1)}
}

// Certificate is the serving certificate to serve now, or nil before the
// first read (for webhook.Listen).
func (r *Rotator) Certificate() *tls.Certificate { return r.state.Load().TLSCertificate() }

// Serving reports whether the certificate served is valid now.
func (r *Rotator) Serving() bool { return r.state.Load().Valid(r.o.Now()) }

// CABundle is the caBundle as the Secret last read says (nil before the
// first read): what a CRD generated now should carry.
func (r *Rotator) CABundle() []byte {
	if s := r.state.Load(); s != nil {
		return s.Bundle()
	}
	return nil
}

// Trigger asks for a pass soon, for instance when a CRD was installed.
func (r *Rotator) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Run keeps the certificates until ctx is done. A failed pass is logged
// and retried after a backoff of up to Resync.
func (r *Rotator) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	backoff := time.Second
	for {
		next, err := r.pass(ctx)
		wait := max(0, min(next.Sub(r.o.Now()), r.o.Resync))
		if err != nil {
			logger.Error(err, "Webhook certificates not kept; retrying", "secret", r.o.Secret, "retryIn", backoff)
			wait, backoff = backoff, min(2*backoff, r.o.Resync)
		} else {
			backoff = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-r.trigger:
			t.Stop()
		case <-t.C:
		}
	}
}

// missingRetry is how soon a pass looks again for an expected webhook CRD
// that is not there yet, or injects again after an injection failed (the
// CRD changed under the patch, as it does just after --install-crds
// creates it): until the caBundle lands, every conversion fails.
const missingRetry = 2 * time.Second

// errAgain says that the Secret changed under a write: read it again at
// once.
var errAgain = errors.New("the Secret changed meanwhile")

// pass reads the Secret, injects its CAs, and takes the step Plan says.
// It returns when to pass again.
func (r *Rotator) pass(ctx context.Context) (time.Time, error) {
	// Plan takes at most Create or Drop, AddCA, Reissue in a row; more
	// means replicas racing, or a bug: wait for the next pass.
	const most = 8
	for range most {
		next, err := r.step(ctx)
		if !errors.Is(err, errAgain) {
			return next, err
		}
	}
	return r.o.Now(), fmt.Errorf("the Secret %s changed %d times in one pass", r.o.Secret, most)
}

// step is one read, plan and write.
func (r *Rotator) step(ctx context.Context) (time.Time, error) {
	logger := klog.FromContext(ctx)
	sec, err := r.o.Secrets.Get(ctx, r.o.Secret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		sec = nil
	case err != nil:
		return time.Time{}, fmt.Errorf("read Secret %s: %w", r.o.Secret, err)
	}
	var s *State
	if sec != nil {
		if s, err = Decode(sec.Data); err != nil {
			logger.Info("Webhook certificates unreadable; making new ones", "secret", r.o.Secret, "reason", err.Error())
			s = nil
		}
	}
	if s != nil {
		r.state.Store(s)
	}
	injected, missing := true, false
	if s != nil && r.o.Injector != nil {
		injected, err = r.o.Injector.Inject(ctx, s.Bundle(), s.CAs[0])
		switch {
		case errors.Is(err, ErrCRDMissing):
			// --install-crds is about to install it: look again soon.
			logger.V(2).Info("Waiting for a webhook CRD to inject the caBundle into", "reason", err.Error())
			missing = true
		case err != nil:
			logger.Error(err, "caBundle not injected into every CRD; trying again", "retryIn", missingRetry)
			missing = true
		}
	}
	now := r.o.Now()
	d := Plan(now, s, r.o.Lifetimes, r.o.Hosts, injected)
	if d.Action == None {
		if missing {
			return earliest(d.Next, now.Add(missingRetry)), nil
		}
		return d.Next, nil
	}
	ns, err := Do(now, s, d.Action, r.o.Lifetimes, r.o.Hosts)
	if err != nil {
		return time.Time{}, err
	}
	if err := r.write(ctx, sec, ns); err != nil {
		return time.Time{}, err
	}
	logger.Info("Webhook certificates rotated", "secret", r.o.Secret, "action", string(d.Action), "reason", d.Reason,
		"servingNotAfter", ns.Serving.NotAfter, "caNotAfter", ns.CAs[0].NotAfter, "cas", len(ns.CAs))
	return now, errAgain // read back what was written, inject it, and plan again
}

// write stores s in the Secret: a create when old is nil, else an update
// at old's resourceVersion. Another replica's write first is errAgain.
func (r *Rotator) write(ctx context.Context, old *corev1.Secret, s *State) error {
	data, err := s.Encode()
	if err != nil {
		return err
	}
	if old == nil {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: r.o.Secret, Labels: map[string]string{"app.kubernetes.io/managed-by": "loom"}},
			Type: corev1.SecretTypeTLS, Data: data}
		_, err = r.o.Secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: InjectFieldManager})
	} else {
		sec := old.DeepCopy()
		sec.Data = data
		_, err = r.o.Secrets.Update(ctx, sec, metav1.UpdateOptions{FieldManager: InjectFieldManager})
	}
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return errAgain
	case err != nil:
		return fmt.Errorf("write Secret %s: %w", r.o.Secret, err)
	}
	return nil
}
