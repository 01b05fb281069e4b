package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/apply"
)

// The packed decoder turns each response the reflector reads into what it
// expects: lists into PackedList, objects into *apply.Packed, the
// initial-events-end bookmark into an object whose annotations say so,
// and error objects into *metav1.Status.
func TestPackedDecoder(t *testing.T) {
	d := packedDecoder{pack: func(b []byte) (*apply.Packed, error) { return apply.SlimJSON(b, "loom") }}
	child := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5",` +
		`"annotations":{"other":"x"},"ownerReferences":[{"apiVersion":"example.com/v1","kind":"MyResource","name":"p","uid":"p1","controller":true,"blockOwnerDeletion":true}]},"data":{"a":"1"}}`

	t.Run("object", func(t *testing.T) {
		obj, gvk, err := d.Decode([]byte(child), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := obj.(*apply.Packed)
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
		if p, ok := items[1].(*apply.Packed); !ok || p.GetResourceVersion() != "5" {
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
