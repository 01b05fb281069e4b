package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"

	"github.com/loom-operator/loom/engine/render/yamldoc"
	"github.com/loom-operator/loom/internal/fixture"
)

// Fixture prefixes for shapeCases.
const (
	fixDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n"
	fixPod        = fixDeployment + "  template:\n    spec:\n"
	fixContainer  = fixPod + "      containers:\n      - name: app\n"
	fixService    = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n"
	fixConfigMap  = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
)

// shapeCases are objects of built-in kinds, whether strict decoding accepts
// them, and whether their shape does.
var shapeCases = []struct {
	name  string
	obj   string
	valid bool
	fast  bool // the shape accepts it, without JSON
}{
	{"empty deployment", fixDeployment, true, true},
	{"replicas", fixDeployment + "  replicas: 3\n", true, true},
	{"replicas null", fixDeployment + "  replicas: null\n", true, true},
	{"replicas a string", fixDeployment + "  replicas: \"3\"\n", false, false},
	{"replicas a float", fixDeployment + "  replicas: 1.5\n", false, false},
	{"replicas beyond int32", fixDeployment + "  replicas: 2147483648\n", false, false},
	{"replicas at int32 max", fixDeployment + "  replicas: 2147483647\n", true, true},
	{"replicas a bool", fixDeployment + "  replicas: true\n", false, false},
	{"replicas a list", fixDeployment + "  replicas: [1]\n", false, false},
	{"replicas an object", fixDeployment + "  replicas: {}\n", false, false},
	{"unknown field", fixDeployment + "  replica: 3\n", false, false},
	{"unknown nested field", fixContainer + "        imagee: nginx\n", false, false},
	{"case matters", fixDeployment + "  Replicas: 3\n", false, false},
	{"inline TypeMeta and metadata", fixDeployment + "  paused: true\n", true, true},
	{"paused a string", fixDeployment + "  paused: \"true\"\n", false, false},
	{"labels", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {a: b}\n", true, true},
	{"label value a number", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {a: 1}\n", false, false},
	{"data", fixConfigMap + "data: {a: b, c: \"\"}\n", true, true},
	{"data null value", fixConfigMap + "data: {a: null}\n", true, true},
	{"data a list", fixConfigMap + "data: [a]\n", false, false},
	{"binaryData base64", fixConfigMap + "binaryData: {a: aGk=}\n", true, true},
	{"binaryData not base64", fixConfigMap + "binaryData: {a: \"!\"}\n", false, false},
	{"immutable", fixConfigMap + "immutable: true\n", true, true},
	{"container ports", fixContainer + "        ports:\n        - containerPort: 80\n          protocol: TCP\n", true, true},
	{"container port a string", fixContainer + "        ports:\n        - containerPort: \"80\"\n", false, false},
	{"quantity", fixContainer + "        resources:\n          requests: {memory: 128Mi, cpu: 100m}\n", true, true},
	{"quantity a number", fixContainer + "        resources:\n          limits: {cpu: 2}\n", true, true},
	{"quantity with spaces", fixContainer + "        resources:\n          limits: {cpu: \" 2 \"}\n", true, true},
	{"quantity invalid", fixContainer + "        resources:\n          limits: {memory: 128MB}\n", false, false},
	{"quantity a list", fixContainer + "        resources:\n          limits: {memory: [1]}\n", false, false},
	{"quantity null", fixContainer + "        resources:\n          limits: {memory: null}\n", true, true},
	{"int-or-string a name", fixService + "  ports:\n  - port: 80\n    targetPort: http\n", true, true},
	{"int-or-string a number", fixService + "  ports:\n  - port: 80\n    targetPort: 8080\n", true, true},
	{"int-or-string beyond int32", fixService + "  ports:\n  - port: 80\n    targetPort: 4294967296\n", false, false},
	{"int-or-string a bool", fixService + "  ports:\n  - port: 80\n    targetPort: true\n", false, false},
	{"int-or-string pointer", fixDeployment + "  strategy:\n    rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}\n", true, true},
	{"int-or-string pointer null", fixDeployment + "  strategy:\n    rollingUpdate: {maxSurge: null}\n", true, true},
	{"time", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  creationTimestamp: \"2024-01-02T03:04:05Z\"\n", true, true},
	{"time invalid", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  creationTimestamp: yesterday\n", false, false},
	{"time null", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  creationTimestamp: null\n", true, true},
	{"int64 field", fixPod + "      terminationGracePeriodSeconds: 9223372036854775807\n", true, true},
	{"int64 field a float", fixPod + "      terminationGracePeriodSeconds: 1.0e19\n", false, false},
	{"float64 field", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\nspec:\n  behavior:\n    scaleUp:\n      tolerance: 0.5\n", true, true},
	{"raw extension", "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: web\nrevision: 1\ndata: {any: [thing]}\n", true, true},
	{"string list", fixContainer + "        args: [a, b]\n", true, true},
	{"string list with a number", fixContainer + "        args: [a, 1]\n", false, false},
	{"list an object", fixContainer + "        args: {a: b}\n", false, false},
	{"secret data", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web\nstringData: {a: b}\ndata: {c: aGk=}\n", true, true},
}

// TestShapeAccepts checks, for objects of built-in kinds, both what
// strictDecode decides and whether the shape alone decides it: a valid
// object should not need JSON, and an invalid one must never pass the
// shape.
func TestShapeAccepts(t *testing.T) {
	for _, tt := range shapeCases {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := yamldoc.Decode([]byte(tt.obj))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			gvk, typed := typedFor(t, obj)
			err = jsonStrictDecode(gvk, typed, obj)
			if valid := err == nil; valid != tt.valid {
				t.Errorf("strict decoding: valid = %t, want %t (%v)", valid, tt.valid, err)
			}
			if fast := shapeOf(reflect.TypeOf(typed)).accepts(obj); fast != tt.fast {
				t.Errorf("shape accepts = %t, want %t", fast, tt.fast)
			}
			if got, want := fmt.Sprint(strictDecode(gvk, obj)), fmt.Sprint(err); got != want {
				t.Errorf("strictDecode = %s, want %s", got, want)
			}
		})
	}
}

// typedFor returns the kind of obj and a new object of its built-in type.
func typedFor(t testing.TB, obj map[string]any) (schema.GroupVersionKind, any) {
	t.Helper()
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	gvk := gv.WithKind(kind)
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	return gvk, typed
}

// checkShape fails when the shape of typed accepts obj but strict JSON
// decoding into typed does not.
func checkShape(t *testing.T, gvk schema.GroupVersionKind, obj map[string]any) {
	t.Helper()
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if !shapeOf(reflect.TypeOf(typed)).accepts(obj) {
		return
	}
	if err := jsonStrictDecode(gvk, typed, obj); err != nil {
		t.Fatalf("the shape of %s accepts what strict decoding refuses: %v\nobject: %#v", gvk, err, obj)
	}
}

// fuzzKinds are the kinds FuzzShapeMatchesStrictDecode checks every
// document against, whatever its own kind.
var fuzzKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "Pod"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "batch", Version: "v1", Kind: "CronJob"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
}

// FuzzShapeMatchesStrictDecode checks that a shape accepts only what strict
// JSON decoding accepts, for documents around the shipped ones (seeded from
// the shipped set's golden files: its rendered children).
func FuzzShapeMatchesStrictDecode(f *testing.F) {
	for _, doc := range fixture.GoldenDocuments(f) {
		f.Add([]byte(doc))
	}
	f.Add([]byte("spec:\n  ports:\n  - port: 80\n    targetPort: http\n  replicas: 2\n"))
	f.Add([]byte("spec:\n  template:\n    spec:\n      containers:\n      - resources: {limits: {cpu: 2}}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		obj, err := yamldoc.Decode(doc)
		if err != nil || obj == nil {
			return
		}
		for _, gvk := range fuzzKinds {
			checkShape(t, gvk, obj)
		}
	})
}

// TestShapeOfEveryBuiltInKind fills objects of every kind the scheme knows
// with random values, breaks them in random places, and checks that the
// kind's shape accepts only what strict JSON decoding accepts.
func TestShapeOfEveryBuiltInKind(t *testing.T) {
	known := scheme.Scheme.AllKnownTypes()
	gvks := make([]schema.GroupVersionKind, 0, len(known))
	for gvk := range known {
		gvks = append(gvks, gvk)
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	r := rand.New(rand.NewSource(1))
	rounds := 20
	if testing.Short() {
		rounds = 2
	}
	for _, gvk := range gvks {
		for range rounds {
			typed := reflect.New(known[gvk])
			fill(r, typed.Elem(), 0)
			raw := jsonMarshal(typed.Interface())
			var obj map[string]any
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
				t.Fatal(err)
			}
			checkShape(t, gvk, obj)
			for range 5 {
				broken := breakAt(r, runtime.DeepCopyJSON(obj))
				checkShape(t, gvk, broken)
			}
		}
	}
}

// fill sets random values in the exported fields of v, a few levels deep.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	if depth > 6 || !v.CanSet() || r.Intn(4) == 0 {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.String:
		v.SetString([]string{"a", "80", "1Gi", "http", "", "TCP"}[r.Intn(6)])
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.Intn(200) - 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.Intn(200)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 1, 0.5, -2.25}[r.Intn(4)])
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem(), depth+1)
	case reflect.Slice:
		n := r.Intn(3)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(r, v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		for i := range r.Intn(3) {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(fmt.Sprintf("k%d", i))
			e := reflect.New(v.Type().Elem()).Elem()
			fill(r, e, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	}
}

// jsonMarshal encodes v, or gives {} when its random values do not encode
// (random bytes as a RawExtension, say).
func jsonMarshal(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return raw
}

// breakValues are what breakAt puts in place of a value.
var breakValues = []any{
	"x", "80", "1Gi", "", int64(1), int64(-1), int64(math.MaxInt32) + 1, int64(math.MinInt64),
	1.5, 1e300, true, false, nil, map[string]any{}, map[string]any{"zz": int64(1)}, []any{}, []any{"a"}, []any{int64(1)},
}

// breakAt replaces a random value of obj, or adds a random key, and
// returns obj.
func breakAt(r *rand.Rand, obj map[string]any) map[string]any {
	var v any = obj
	for {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) == 0 || r.Intn(4) == 0 {
				t[[]string{"zz", "name", "kind", "spec"}[r.Intn(4)]] = breakValues[r.Intn(len(breakValues))]
				return obj
			}
			k := keys[r.Intn(len(keys))]
			if r.Intn(3) == 0 {
				t[k] = breakValues[r.Intn(len(breakValues))]
				return obj
			}
			v = t[k]
		case []any:
			if len(t) == 0 {
				return obj
			}
			i := r.Intn(len(t))
			if r.Intn(3) == 0 {
				t[i] = breakValues[r.Intn(len(breakValues))]
				return obj
			}
			v = t[i]
		default:
			return obj
		}
	}
}

// TestShapesOfShippedDocuments checks that the shipped templates render
// objects that their shapes accept, so that rendering them needs no JSON:
// the documents of the shipped set's golden files, which a test of
// engine/render keeps equal to what it renders.
func TestShapesOfShippedDocuments(t *testing.T) {
	for _, doc := range fixture.GoldenDocuments(t) {
		obj, err := yamldoc.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		gvk, typed := typedFor(t, obj)
		if !shapeOf(reflect.TypeOf(typed)).accepts(obj) {
			t.Errorf("the shape of %s does not accept:\n%s", gvk, doc)
		}
	}
}
