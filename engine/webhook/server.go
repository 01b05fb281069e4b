package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// Path is where the Handler serves ConversionReviews, and what the CRD's
// clientConfig names.
const Path = "/convert"

// DefaultMaxBody is the largest review body the Handler reads: 3 MiB, the
// API server's own limit on a request body.
const DefaultMaxBody = 3 << 20

// DefaultTimeout is the deadline of one review: shorter than the API
// server's default webhook timeout (30 s), so that Loom's own message
// reaches kubectl rather than the API server's "context deadline
// exceeded".
const DefaultTimeout = 10 * time.Second

// reviewAPIVersion is the only ConversionReview version Loom serves (the
// CRDs it generates list only it in conversionReviewVersions).
var reviewAPIVersion = apiextv1.SchemeGroupVersion.String()

// Options configure the Handler.
type Options struct {
	// Registry gives each parent kind's Converter.
	Registry *Registry
	// Timeout is the deadline of one review (0: DefaultTimeout). A review
	// over it fails, whatever its converter does after.
	Timeout time.Duration
	// MaxBody is the largest body read (0: DefaultMaxBody); a larger one
	// is refused with 413.
	MaxBody int64
	// Metrics counts the reviews (nil: not counted).
	Metrics *Metrics
}

// Handler serves ConversionReview v1 at Path. A review it cannot read (not
// a POST, too large, not JSON, not apiextensions.k8s.io/v1, no request) is
// refused with an HTTP error; one it reads is always answered 200 with the
// request's uid and a result, Success with every object converted or
// Failure with the reason and no object.
func Handler(o Options) http.Handler {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	mux := http.NewServeMux()
	mux.Handle(Path, &handler{o: o})
	return mux
}

// handler is the Handler at Path.
type handler struct{ o Options }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "a ConversionReview is POSTed", http.StatusMethodNotAllowed)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.o.Metrics.observe("", resultRefused, 0)
		http.Error(w, fmt.Sprintf("ConversionReview larger than %d bytes", h.o.MaxBody), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		h.o.Metrics.observe("", resultRefused, 0)
		http.Error(w, "read the ConversionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	req, err := decodeReview(data)
	if err != nil {
		h.o.Metrics.observe("", resultRefused, 0)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	defer cancel()
	kind, objects, err := h.convertAll(ctx, req)
	resp := &apiextv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}, ConvertedObjects: objects}
	result := resultSuccess
	if err != nil {
		resp.ConvertedObjects = nil
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		result = resultFailure
		klog.FromContext(r.Context()).V(2).Info("Conversion failed", "uid", req.UID, "kind", kind, "err", err.Error())
	}
	h.o.Metrics.observe(kind, result, time.Since(start))
	out := apiextv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: reviewAPIVersion, Kind: "ConversionReview"}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		klog.FromContext(r.Context()).V(2).Info("Could not write the ConversionReview response", "uid", req.UID, "err", err.Error())
	}
}

// decodeReview reads a ConversionReview v1 and returns its request.
func decodeReview(data []byte) (*apiextv1.ConversionRequest, error) {
	var review apiextv1.ConversionReview
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, fmt.Errorf("decode the ConversionReview: %w", err)
	}
	if review.APIVersion != reviewAPIVersion || review.Kind != "ConversionReview" {
		return nil, fmt.Errorf("a %s %s is not served: Loom serves ConversionReview %s (list only it in the CRD's conversionReviewVersions)",
			review.APIVersion, review.Kind, reviewAPIVersion)
	}
	if review.Request == nil {
		return nil, errors.New("the ConversionReview has no request")
	}
	return review.Request, nil
}

// converted is what the conversion of a review gives: the kind (the
// metrics' label) and the objects, or an error.
type converted struct {
	kind    string
	objects []runtime.RawExtension
	err     error
}

// convertAll converts the request's objects, one by one, until ctx's
// deadline. The converter runs on a goroutine of its own: past the
// deadline the review fails at once, and a converter that carries on is
// left to finish (templates have their own render deadline) with its
// result dropped.
func (h *handler) convertAll(ctx context.Context, req *apiextv1.ConversionRequest) (string, []runtime.RawExtension, error) {
	done := make(chan converted, 1)
	go func() { done <- h.convert(ctx, req) }()
	select {
	case c := <-done:
		return c.kind, c.objects, c.err
	case <-ctx.Done():
		return "", nil, fmt.Errorf("conversion to %s did not finish within %s", req.DesiredAPIVersion, h.o.Timeout)
	}
}

// convert converts every object of req to its desired version.
func (h *handler) convert(ctx context.Context, req *apiextv1.ConversionRequest) converted {
	to, err := schema.ParseGroupVersion(req.DesiredAPIVersion)
	if err != nil || to.Version == "" {
		return converted{err: fmt.Errorf("desiredAPIVersion %q is not group/version", req.DesiredAPIVersion)}
	}
	out := converted{objects: make([]runtime.RawExtension, 0, len(req.Objects))}
	for i, raw := range req.Objects {
		if ctx.Err() != nil {
			return converted{kind: out.kind, err: ctx.Err()}
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			return converted{kind: out.kind, err: fmt.Errorf("object %d: %w", i, err)}
		}
		gk := obj.GroupVersionKind().GroupKind()
		if gk.Group != to.Group {
			return converted{kind: out.kind, err: fmt.Errorf("%s %s: cannot convert to %s, another group", gk, objectName(obj), req.DesiredAPIVersion)}
		}
		c := h.o.Registry.Get(gk)
		if c == nil {
			return converted{err: fmt.Errorf("no converter for %s: no template set Loom runs serves several versions of it", gk)}
		}
		out.kind = gk.Kind
		res, err := safeConvert(c, obj, to.Version)
		if err != nil {
			return converted{kind: out.kind, err: fmt.Errorf("convert %s %s to %s: %w", gk.Kind, objectName(obj), to.Version, err)}
		}
		if res.GetAPIVersion() != req.DesiredAPIVersion || res.GroupVersionKind().Kind != gk.Kind {
			return converted{kind: out.kind, err: fmt.Errorf("convert %s %s to %s: the converter returned a %s %s",
				gk.Kind, objectName(obj), to.Version, res.GetAPIVersion(), res.GetKind())}
		}
		b, err := res.MarshalJSON()
		if err != nil {
			return converted{kind: out.kind, err: fmt.Errorf("convert %s %s to %s: %w", gk.Kind, objectName(obj), to.Version, err)}
		}
		out.objects = append(out.objects, runtime.RawExtension{Raw: b})
	}
	return out
}

// safeConvert calls c.Convert, and returns a panic in it as an error.
func safeConvert(c Converter, obj *unstructured.Unstructured, to string) (res *unstructured.Unstructured, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("the converter panicked: %v", r)
		}
	}()
	res, err = c.Convert(obj, to)
	if err == nil && res == nil {
		err = errors.New("the converter returned no object")
	}
	return res, err
}

// objectName is namespace/name, or name.
func objectName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
