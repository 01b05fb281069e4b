package packwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/loom-operator/loom/engine/pack"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// A packed client lists and watches a resource with the objects packed
// straight from the API server's JSON (pack.SlimJSON, pack.StripJSON),
// for Loom's informers. The dynamic client decodes every object of a
// list and every watch event into unstructured maps first, which an
// informer's transform then packs: at 1 000 parents that decoding was a
// fifth of Loom's CPU, on a machine where Loom shares two cores with the
// API server.

var (
	versionV1    = schema.GroupVersion{Version: "v1"}
	packedScheme = runtime.NewScheme()
	packedParams = runtime.NewParameterCodec(packedScheme)
)

func init() {
	metav1.AddToGroupVersion(packedScheme, versionV1)
}

// PackFunc packs one object's JSON.
type PackFunc func([]byte) (*pack.Packed, error)

// Child packs a child as Loom's child caches keep it (pack.SlimJSON).
func Child(manager string) PackFunc {
	return func(b []byte) (*pack.Packed, error) { return pack.SlimJSON(b, manager) }
}

// Parent packs a parent as Loom's parent caches keep it: all but
// managedFields and kubectl's last-applied copy (pack.StripJSON).
var Parent PackFunc = pack.StripJSON

// Client is a REST client whose responses decode into packed
// objects, packed by the PackFunc it was made with.
type Client struct {
	rest rest.Interface
}

// NewClient returns a packed client that shares h, the HTTP client
// (and so the connections) of Loom's other clients.
func NewClient(cfg *rest.Config, h *http.Client, pack PackFunc) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = packedSerializer{pack: pack}
	// Every request names its whole path with AbsPath (resourcePath),
	// which client-go joins to the host's own path only: the client has
	// no group-version and no API path of its own.
	c.GroupVersion = nil
	c.APIPath = ""
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(c, h)
	if err != nil {
		return nil, fmt.Errorf("create packed REST client: %w", err)
	}
	return &Client{rest: rc}, nil
}

// ListWatch lists and watches gvr in namespace ("" for all), each list's
// options changed by tweak if it is not nil.
func (c *Client) ListWatch(gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) *cache.ListWatch {
	path := resourcePath(gvr, namespace)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&opts)
			}
			return c.rest.Get().AbsPath(path...).SpecificallyVersionedParams(&opts, packedParams, versionV1).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&opts)
			}
			opts.Watch = true
			return c.rest.Get().AbsPath(path...).SpecificallyVersionedParams(&opts, packedParams, versionV1).Watch(ctx)
		},
	}
}

// resourcePath is the API path of gvr's collection in namespace.
func resourcePath(gvr schema.GroupVersionResource, namespace string) []string {
	p := []string{"api"}
	if gvr.Group != "" {
		p = []string{"apis", gvr.Group}
	}
	p = append(p, gvr.Version)
	if namespace != "" {
		p = append(p, "namespaces", namespace)
	}
	return append(p, gvr.Resource)
}

// NewInformer returns an informer of gvr whose cache holds
// *pack.Packed objects.
func NewInformer(c *Client, gvr schema.GroupVersionResource, namespace string, resync time.Duration,
	tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return InformerOf(c.ListWatch(gvr, namespace, tweak), gvr, resync)
}

// InformerOf returns an informer of gvr whose cache holds the
// *pack.Packed objects lw lists and watches (from a Client's ListWatch,
// filtered, say, by shard).
func InformerOf(lw cache.ListerWatcher, gvr schema.GroupVersionResource, resync time.Duration) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &pack.Packed{},
		cache.SharedIndexInformerOptions{
			ResyncPeriod: resync, Indexers: cache.Indexers{},
			// As the dynamic informer's: client-go's logs name the resource.
			ObjectDescription: gvr.String(),
		})
}

// packedSerializer decodes JSON responses into packed objects: an
// object, a list of them (List), or a Status. A watch event is split
// by watchEventDecoder, and its object decoded by packedDecoder. It
// encodes nothing: Loom's packed clients only read.
type packedSerializer struct{ pack PackFunc }

// SupportedMediaTypes returns JSON only.
func (s packedSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	d := packedDecoder(s)
	return []runtime.SerializerInfo{{
		MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
		Serializer: d,
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true, Serializer: watchEventDecoder{}, Framer: jsonserializer.Framer,
		},
	}}
}

// EncoderForVersion returns e.
func (packedSerializer) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

// DecoderToVersion returns d.
func (packedSerializer) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// packedDecoder is packedSerializer's decoder of objects.
type packedDecoder struct{ pack PackFunc }

// List is a list response whose items are packed.
type List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []*pack.Packed
}

// DeepCopyObject returns a copy that shares the items, which are never
// modified.
func (l *List) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = append([]*pack.Packed(nil), l.Items...)
	return &out
}

// Decode decodes data, an object's, a list's or a Status's JSON.
func (d packedDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	apiVersion, kind, hasItems, err := pack.JSONKind(data)
	if err != nil {
		return nil, nil, fmt.Errorf("decode %.40q: %w", data, err)
	}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	if st, ok := into.(*metav1.Status); ok || kind == "Status" && apiVersion == "v1" {
		if st == nil {
			st = &metav1.Status{}
		}
		if err := json.Unmarshal(data, st); err != nil {
			return nil, nil, fmt.Errorf("decode Status: %w", err)
		}
		return st, &gvk, nil
	}
	if hasItems && strings.HasSuffix(kind, "List") {
		var wire struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        metav1.ListMeta   `json:"metadata"`
			Items           []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(data, &wire); err != nil {
			return nil, nil, fmt.Errorf("decode %s: %w", kind, err)
		}
		list := &List{TypeMeta: wire.TypeMeta, ListMeta: wire.Metadata, Items: make([]*pack.Packed, 0, len(wire.Items))}
		for _, raw := range wire.Items {
			p, err := d.pack(raw)
			if err != nil {
				return nil, nil, fmt.Errorf("decode %s: %w", kind, err)
			}
			list.Items = append(list.Items, p)
		}
		return list, &gvk, nil
	}
	p, err := d.pack(data)
	if err != nil {
		return nil, nil, err
	}
	if p.GetName() == "" && p.GetUID() == "" {
		// A watch bookmark: its annotations, which a slimmed object
		// drops, say whether it ends the initial events.
		if p, err = pack.StripJSON(data); err != nil {
			return nil, nil, err
		}
	}
	return p, &gvk, nil
}

// Encode refuses: packed clients send no bodies.
func (packedDecoder) Encode(runtime.Object, io.Writer) error {
	return fmt.Errorf("a packed client encodes no objects")
}

// Identifier names the decoder.
func (packedDecoder) Identifier() runtime.Identifier { return "loom-packed-json" }

// watchEventDecoder decodes a watch event's frame into a metav1.WatchEvent
// whose object is the frame's bytes, not yet decoded. The API machinery's
// JSON serializer reads the frame twice (its kind, then the event) and
// copies the object out: at 1 000 parents that was more of Loom's CPU
// than packing the objects. The object aliases the frame's buffer, which
// the watch decodes (packedDecoder, which copies what it keeps) before it
// reads the next frame.
type watchEventDecoder struct{}

// Decode splits data into into, a *metav1.WatchEvent.
func (watchEventDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("a watch stream decodes into *v1.WatchEvent, not %T", into)
	}
	typ, obj, err := pack.WatchEventParts(data)
	if err != nil {
		return nil, nil, err
	}
	ev.Type, ev.Object = typ, runtime.RawExtension{Raw: obj}
	return ev, &schema.GroupVersionKind{Version: "v1", Kind: "WatchEvent"}, nil
}

// Encode refuses: packed clients send no bodies.
func (watchEventDecoder) Encode(runtime.Object, io.Writer) error {
	return fmt.Errorf("a packed client encodes no watch events")
}

// Identifier names the decoder.
func (watchEventDecoder) Identifier() runtime.Identifier { return "loom-watch-event-json" }

// ID returns a cached object as Loom's informers hold it, packed, to
// read its UID and resourceVersion without decoding it.
func ID(obj any) (*pack.Packed, bool) {
	p, ok := obj.(*pack.Packed)
	return p, ok
}

// Unpack returns a cached object (packed, as Loom's informers hold it) as
// an unstructured object the caller owns.
func Unpack(obj any) (*unstructured.Unstructured, bool) {
	p, ok := obj.(*pack.Packed)
	if !ok {
		return nil, false
	}
	u, err := p.Object()
	if err != nil {
		utilruntime.HandleError(err)
		return nil, false
	}
	return u, true
}
