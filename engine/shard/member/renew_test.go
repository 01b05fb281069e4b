package member

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// A renewal whose answer was lost (its request timed out) but that reached
// the server leaves the Lease at a version this replica has not seen: the
// next renewal conflicts, and must renew that version rather than count
// as fenced. A Lease recreated under another UID is fenced.
func TestRenewAfterALostAnswer(t *testing.T) {
	for _, tt := range []struct {
		name       string
		storedUID  types.UID
		wantFenced bool
	}{
		{name: "an earlier renewal landed", storedUID: "u1"},
		{name: "recreated by someone else", storedUID: "u2", wantFenced: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "r-bcdfg", Namespace: "ns", UID: "u1", ResourceVersion: "1"}}
			stored := own.DeepCopy()
			stored.UID, stored.ResourceVersion = tt.storedUID, "2"
			if err := client.Tracker().Add(stored); err != nil {
				t.Fatal(err)
			}
			rv := 2
			// The fake tracker ignores resourceVersions: conflict as the
			// API server does.
			client.PrependReactor("update", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
				l := a.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
				cur, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), l.Namespace, l.Name)
				if err != nil {
					return true, nil, err
				}
				if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
					return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("the object has been modified"))
				}
				l = l.DeepCopy()
				rv++
				l.ResourceVersion = strconv.Itoa(rv)
				return true, l, client.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), l, l.Namespace)
			})
			m := New(Options{Client: client, Namespace: "ns", Group: "g", Prefix: "r"})
			m.id, m.own = own.Name, own
			err := m.renewLease(context.Background())
			if got := errors.Is(err, errFenced); got != tt.wantFenced {
				t.Fatalf("renewLease() = %v, fenced %v, want fenced %v", err, got, tt.wantFenced)
			}
			if !tt.wantFenced && (err != nil || m.own.ResourceVersion != "3" || m.now() >= time.Duration(m.validUntil.Load())) {
				t.Errorf("renewLease() = %v; own Lease at version %s, valid %v: want renewed at version 3", err, m.own.ResourceVersion, m.now() < time.Duration(m.validUntil.Load()))
			}
		})
	}
}
