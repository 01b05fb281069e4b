package pack

import (
	"testing"
)

// StatusState reads status.state from a packed object's JSON, whichever
// way it was packed, and is empty when the object has none.
func TestStatusState(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string
	}{
		{name: "ready", json: `{"apiVersion":"v1","kind":"K","metadata":{"name":"a"},"status":{"conditions":[],"state":"Ready"}}`, want: "Ready"},
		{name: "state before other fields", json: `{"status":{"state":"Failed","children":[{"state":"x"}]},"kind":"K","metadata":{"name":"a"}}`, want: "Failed"},
		{name: "no status", json: `{"kind":"K","metadata":{"name":"a"},"spec":{"state":"Ready"}}`, want: ""},
		{name: "status without state", json: `{"kind":"K","metadata":{"name":"a"},"status":{"url":"x"}}`, want: ""},
		{name: "a state that is not a string", json: `{"kind":"K","metadata":{"name":"a"},"status":{"state":3}}`, want: ""},
		{name: "status null", json: `{"kind":"K","metadata":{"name":"a"},"status":null}`, want: ""},
		{name: "escaped", json: `{"kind":"K","metadata":{"name":"a"},"status":{"state":"Bui\u006cding"}}`, want: "Building"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := StripJSON([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.StatusState(); got != tt.want {
				t.Errorf("StatusState() of the packed JSON = %q, want %q", got, tt.want)
			}
			u, err := p.Object()
			if err != nil {
				t.Fatal(err)
			}
			q, err := Pack(u)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.StatusState(); got != tt.want {
				t.Errorf("StatusState() of the packed object = %q, want %q", got, tt.want)
			}
		})
	}
	var nilPacked *Packed
	if got := nilPacked.StatusState(); got != "" {
		t.Errorf("StatusState() of nil = %q, want empty", got)
	}
}
