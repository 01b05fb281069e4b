package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/status"
)

const (
	// AnnotationSeed is, on a parent, the fingerprint of the seed its
	// chart's values come from (Fingerprint) and the parent's UID,
	// "<fingerprint>/<uid>": Loom writes it when it first reads or makes
	// the seed, and finds a seed Secret that was deleted or replaced by
	// it. One copied onto another parent (another UID) is ignored.
	AnnotationSeed = "loom.dev/seed"
	// AnnotationAcceptNewSeed, on a parent whose seed was lost, set to
	// the lost seed's fingerprint (the parent's AnnotationSeed), lets Loom
	// make a new seed: every random value, key and certificate of the
	// chart changes. Naming the fingerprint makes it good for one loss.
	AnnotationAcceptNewSeed = "loom.dev/accept-new-seed"
)

// Fingerprint names a seed without revealing it.
func Fingerprint(seed []byte) string {
	sum := sha256.Sum256(append([]byte("loom seed fingerprint\x00"), seed...))
	return hex.EncodeToString(sum[:8])
}

// seedAction is what Loom does with a parent's seed Secret.
type seedAction int

const (
	// useSeed: the Secret's seed is the parent's.
	useSeed seedAction = iota
	// makeSeed: the parent has no seed yet (or a lost one was accepted).
	makeSeed
)

// judgeSeed decides what to do with parent's seed from whether its Secret
// was found and the fingerprint of the seed it holds (fp, when found),
// and whether the parent's AnnotationSeed must be (re)written. A parent
// that had a seed (AnnotationSeed) whose Secret is gone or holds another
// seed has lost it: a *LostError, unless AnnotationAcceptNewSeed
// accepts that loss. A parent with no AnnotationSeed (made before Loom
// kept one, or whose annotations were cleared) takes the Secret it
// finds, or a new one.
func judgeSeed(parent *unstructured.Unstructured, secret string, found bool, fp string) (seedAction, bool, error) {
	had := MarkOf(parent)
	accepted := had != "" && parent.GetAnnotations()[AnnotationAcceptNewSeed] == had
	switch {
	case found && fp == had:
		return useSeed, false, nil
	case found && (had == "" || accepted):
		return useSeed, true, nil
	case found:
		return useSeed, false, &LostError{Parent: parent, Secret: secret, Fingerprint: had, Replaced: true}
	case had == "" || accepted:
		return makeSeed, true, nil
	}
	return makeSeed, false, &LostError{Parent: parent, Secret: secret, Fingerprint: had}
}

// MarkOf is the seed fingerprint that parent's AnnotationSeed names,
// or "" when it has none, or one written for another parent.
func MarkOf(parent *unstructured.Unstructured) string {
	fp, uid, _ := strings.Cut(parent.GetAnnotations()[AnnotationSeed], "/")
	if uid != string(parent.GetUID()) {
		return ""
	}
	return fp
}

// Mark is the AnnotationSeed value of parent for fingerprint fp.
func Mark(parent *unstructured.Unstructured, fp string) string {
	return fp + "/" + string(parent.GetUID())
}

// LostError is the render error of a parent whose seed Secret is gone
// (or holds another seed): Loom renders nothing rather than give the
// chart's passwords, keys and certificates new values under a running
// app, and says how to accept a new seed.
type LostError struct {
	Parent      *unstructured.Unstructured
	Secret      string
	Fingerprint string
	Replaced    bool
}

func (e *LostError) Error() string {
	what := "was deleted"
	if e.Replaced {
		what = "holds another seed than the parent's"
	}
	p := e.Parent
	gk := p.GroupVersionKind().GroupKind()
	ns := ""
	if p.GetNamespace() != "" {
		ns = " -n " + p.GetNamespace()
	}
	return fmt.Sprintf("seed Secret %s/%s %s (seed %s): a new seed would change every random value, key and certificate "+
		"the chart made for this parent, so nothing is rendered; restore the Secret, or accept new values with "+
		"kubectl annotate %s %s%s %s=%s",
		p.GetNamespace(), e.Secret, what, e.Fingerprint,
		strings.ToLower(gk.String()), p.GetName(), ns, AnnotationAcceptNewSeed, e.Fingerprint)
}

// Reason is the parent's Degraded reason (status.Reasoned).
func (e *LostError) Reason() string { return status.ReasonSeedLost }
