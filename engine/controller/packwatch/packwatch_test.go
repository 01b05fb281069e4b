package packwatch

import (
	"io"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// The packed decoder turns each response the reflector reads into what it
// expects: lists into List, objects into *pack.Packed, the
// initial-events-end bookmark into an object whose annotations say so,
// and error objects into *metav1.Status.
func TestPackedDecoder(t *testing.T) {
	d := packedDecoder{pack: func(b []byte) (*pack.Packed, error) { return pack.SlimJSON(b, "loom") }}
	child := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5",` +
		`"annotations":{"other":"x"},"ownerReferences":[{"apiVersion":"example.com/v1","kind":"MyResource","name":"p","uid":"p1","controller":true,"blockOwnerDeletion":true}]},"data":{"a":"1"}}`

	t.Run("object", func(t *testing.T) {
		obj, gvk, err := d.Decode([]byte(child), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := obj.(*pack.Packed)
		if !ok || p.GetName() != "a" || p.ControllerUID() != "p1" || *gvk != (schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}) {
			t.Fatalf("got %T %v, %v", obj, obj, gvk)
		}
		if a := p.GetObjectMeta().GetAnnotations(); a != nil {
			t.Errorf("annotations of a named object: %v; want none (not kept typed)", a)
		}
	})
	t.Run("list", func(t *testing.T) {
		list := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"c1"},"items":[` + child + `,` + child + `]}`
		obj, _, err := d.Decode([]byte(list), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		la, err := meta.ListAccessor(obj)
		if err != nil || la.GetResourceVersion() != "9" || la.GetContinue() != "c1" {
			t.Fatalf("list meta: %v, %v", la, err)
		}
		items, err := meta.ExtractListWithAlloc(obj)
		if err != nil || len(items) != 2 {
			t.Fatalf("items: %v, %v", items, err)
		}
		if p, ok := items[1].(*pack.Packed); !ok || p.GetResourceVersion() != "5" {
			t.Errorf("item: %T %v", items[1], items[1])
		}
	})
	t.Run("bookmark ending the initial events", func(t *testing.T) {
		bm := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}`
		obj, _, err := d.Decode([]byte(bm), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := meta.Accessor(obj)
		if err != nil || m.GetResourceVersion() != "12" || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("bookmark: %v, %v", m, err)
		}
	})
	t.Run("status", func(t *testing.T) {
		st := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`
		for _, into := range []*metav1.Status{nil, {}} {
			var obj any
			var err error
			if into == nil {
				obj, _, err = d.Decode([]byte(st), nil, nil)
			} else {
				obj, _, err = d.Decode([]byte(st), nil, into)
			}
			s, ok := obj.(*metav1.Status)
			if err != nil || !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
				t.Errorf("status: %T %v, %v", obj, obj, err)
			}
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		if _, _, err := d.Decode([]byte(`{"kind":`), nil, nil); err == nil {
			t.Error("no error")
		}
	})
}

// A watch stream, framed and decoded by client-go's watch decoder with
// Loom's event and object decoders, gives the events the API server sent.
func TestPackedWatchStream(t *testing.T) {
	stream := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5"},"data":{"k":"v"}}}
{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"6"},"data":{"k":"w"}}}
{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}}
{"type":"NOPE","object":{}}
`
	s := packedSerializer{pack: pack.StripJSON}
	info := s.SupportedMediaTypes()[0]
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(strings.NewReader(stream)))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), info.Serializer)
	want := []struct {
		typ watch.EventType
		rv  string
	}{{watch.Added, "5"}, {watch.Modified, "6"}, {watch.Bookmark, "7"}}
	for _, w := range want {
		typ, obj, err := d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		p, ok := obj.(*pack.Packed)
		if typ != w.typ || !ok || p.GetResourceVersion() != w.rv {
			t.Fatalf("got %s %T %v; want %s at %s", typ, obj, obj, w.typ, w.rv)
		}
		if typ == watch.Modified {
			u, _ := p.Object()
			if u.Object["data"].(map[string]any)["k"] != "w" {
				t.Errorf("modified object: %v", u.Object)
			}
		}
	}
	typ, obj, err := d.Decode()
	if st, ok := obj.(*metav1.Status); err != nil || typ != watch.Error || !ok || st.Code != 410 {
		t.Fatalf("error event: %s %T %v, %v", typ, obj, obj, err)
	}
	if _, _, err := d.Decode(); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("an unknown event type: %v", err)
	}
	if _, _, err := (watchEventDecoder{}).Decode([]byte(`{}`), nil, &metav1.Status{}); err == nil {
		t.Error("decoded a watch event into a Status")
	}
	if _, _, err := (watchEventDecoder{}).Decode([]byte(`[1]`), nil, &metav1.WatchEvent{}); err == nil {
		t.Error("decoded an array as a watch event")
	}
}

// TestPackedWatchStreamRefusesAMalformedFrame pins the invariant the
// packers' scanner relies on: it checks a value's structure only as far as
// it reads it (a literal or a number is skipped to its delimiter, not
// parsed), so it must be handed well-formed JSON. On a watch, client-go's
// JSON framer hands over one frame at a time and decodes each as a
// json.RawMessage, which refuses malformed JSON before the packer sees it:
// a malformed event ends the watch with an error (the reflector then
// lists and watches again); it never becomes a cached object.
func TestPackedWatchStreamRefusesAMalformedFrame(t *testing.T) {
	const good = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5"}}}` + "\n"
	tests := map[string]string{
		"a literal cut short":     `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u1","resourceVersion":"6"},"immutable":tru}}`,
		"a trailing comma":        `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u1","resourceVersion":"6"},}}`,
		"a number that is not":    `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u1","resourceVersion":"6","generation":1-2}}}`,
		"a frame cut short":       `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"`,
		"an unescaped newline":    "{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\nb\"}}}",
		"garbage between members": `{"type":"MODIFIED" x,"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}`,
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			s := packedSerializer{pack: pack.StripJSON}
			info := s.SupportedMediaTypes()[0]
			frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(strings.NewReader(good + bad + "\n" + good)))
			d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), info.Serializer)
			if typ, _, err := d.Decode(); err != nil || typ != watch.Added {
				t.Fatalf("the good event before: %s, %v", typ, err)
			}
			typ, obj, err := d.Decode()
			if err == nil {
				t.Fatalf("a malformed event decoded as %s %#v; want an error", typ, obj)
			}
		})
	}
}
