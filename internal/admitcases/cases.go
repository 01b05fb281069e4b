package admitcases

// widget and gadget write a parent of the table's kinds: the header, then
// the rest of the object as given.
func widget(name, rest string) string {
	return "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata:\n  name: " + name + "\n" + rest
}

func gadget(name, rest string) string {
	return "apiVersion: admit.test.loom.dev/v1\nkind: Gadget\nmetadata:\n  name: " + name + "\n" + rest
}

// The defaults a Widget's spec gets, in the order the YAML below lists
// them after the fields a case sets.
const widgetDefaults = `
  replicas: 1
  minReplicas: 0
  tier: frontend
  enabled: true
  region: eu`

// Cases is the table: good parents, type errors, enum, pattern and range
// misses, CEL failures, pruned fields, defaults at several depths.
var Cases = []Case{
	// Good ones, defaulted.
	{
		Name:   "minimal",
		Object: widget("minimal", "spec:\n  image: nginx\n"),
		Stored: widget("", "spec:\n  image: nginx"+widgetDefaults+"\n"),
	},
	{
		Name:   "no-spec",
		Object: widget("no-spec", ""),
		Stored: widget("", ""),
	},
	{
		Name: "full",
		Object: widget("full", `spec:
  image: nginx:1.27
  replicas: 3
  minReplicas: 2
  tier: backend
  memory: 512Mi
  ratio: 0.5
  enabled: false
  owner: alice
  host: web.example.com
  region: us
  ports: [80, 443]
  tags: [a, b]
  env: {A: "1", B: two}
  window: {start: 1, end: 2}
  database: {name: orders}
  containers:
    - name: app
    - name: sidecar
      cpu: 50m
`),
		Stored: widget("", `spec:
  image: nginx:1.27
  replicas: 3
  minReplicas: 2
  tier: backend
  memory: 512Mi
  ratio: 0.5
  enabled: false
  owner: alice
  host: web.example.com
  region: us
  ports: [80, 443]
  tags: [a, b]
  env: {A: "1", B: two}
  window: {start: 1, end: 2}
  database:
    name: orders
    size: 1Gi
    backup: {enabled: false, schedule: '@daily'}
  containers:
    - name: app
      cpu: 100m
    - name: sidecar
      cpu: 50m
`),
	},
	{
		Name: "nested-defaults-keep-given",
		Object: widget("nested-defaults-keep-given", `spec:
  image: nginx
  database:
    name: db
    backup: {schedule: '@hourly'}
`),
		Stored: widget("", `spec:
  image: nginx
  database:
    name: db
    size: 1Gi
    backup: {enabled: false, schedule: '@hourly'}`+widgetDefaults+"\n"),
	},
	{
		Name: "unknown-fields-pruned",
		Object: widget("unknown-fields-pruned", `extra: dropped
spec:
  image: nginx
  replcas: 3
  database: {name: db, color: blue}
  containers: [{name: app, image: x}]
`),
		Stored: widget("", `spec:
  image: nginx
  database:
    name: db
    size: 1Gi
    backup: {enabled: false, schedule: '@daily'}
  containers: [{name: app, cpu: 100m}]`+widgetDefaults+"\n"),
		Warnings: []string{`unknown field "extra"`, `unknown field "spec.containers[0].image"`,
			`unknown field "spec.database.color"`, `unknown field "spec.replcas"`},
	},
	{
		Name: "preserve-unknown-fields-kept",
		Object: widget("preserve-unknown-fields-kept", `spec:
  image: nginx
  config:
    anything: [1, two, {three: 3}]
    nested: {deep: {deeper: true}}
`),
		Stored: widget("", `spec:
  image: nginx
  config:
    anything: [1, two, {three: 3}]
    nested: {deep: {deeper: true}}`+widgetDefaults+"\n"),
	},
	{
		Name:   "null-defaulted",
		Object: widget("null-defaulted", "spec:\n  image: nginx\n  replicas: null\n  memory: null\n"),
		Stored: widget("", "spec:\n  image: nginx"+widgetDefaults+"\n"),
	},
	{
		Name:   "nullable-null-kept",
		Object: widget("nullable-null-kept", "spec:\n  image: nginx\n  mode: null\n"),
		Stored: widget("", "spec:\n  image: nginx\n  mode: null"+widgetDefaults+"\n"),
	},
	{
		Name:   "status-dropped",
		Object: widget("status-dropped", "spec:\n  image: nginx\nstatus:\n  state: Ready\n"),
		Stored: widget("", "spec:\n  image: nginx"+widgetDefaults+"\n"),
	},
	{
		Name:   "transition-rule-not-run-on-create",
		Object: widget("transition-rule-not-run-on-create", "spec:\n  image: nginx\n  region: ap\n"),
		Stored: widget("", "spec:\n  image: nginx\n  replicas: 1\n  minReplicas: 0\n  tier: frontend\n  enabled: true\n  region: ap\n"),
	},

	// Type errors.
	{
		Name:   "string-for-integer",
		Object: widget("string-for-integer", "spec:\n  image: nginx\n  replicas: \"3\"\n"),
		Error:  `Widget.admit.test.loom.dev "string-for-integer" is invalid: [spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "float-for-integer",
		Object: widget("float-for-integer", "spec:\n  image: nginx\n  replicas: 2.5\n"),
		Error:  `Widget.admit.test.loom.dev "float-for-integer" is invalid: [spec.replicas: Invalid value: "float64": spec.replicas in body must be of type int32: "float64", <nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.replicas, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "string-for-boolean",
		Object: widget("string-for-boolean", "spec:\n  image: nginx\n  enabled: \"yes\"\n"),
		Error:  `Widget.admit.test.loom.dev "string-for-boolean" is invalid: [spec.enabled: Invalid value: "string": spec.enabled in body must be of type boolean: "string", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "integer-in-string-map",
		Object: widget("integer-in-string-map", "spec:\n  image: nginx\n  env: {A: 1}\n"),
		Error:  `Widget.admit.test.loom.dev "integer-in-string-map" is invalid: [spec.env.A: Invalid value: "integer": spec.env.A in body must be of type string: "integer", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "string-for-object",
		Object: widget("string-for-object", "spec:\n  image: nginx\n  database: orders\n"),
		Error:  `Widget.admit.test.loom.dev "string-for-object" is invalid: [spec.database: Invalid value: "string": spec.database in body must be of type object: "string", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},

	// Enum, pattern, range and size misses.
	{
		Name:   "enum-miss",
		Object: widget("enum-miss", "spec:\n  image: nginx\n  tier: middle\n"),
		Error:  `Widget.admit.test.loom.dev "enum-miss" is invalid: [spec.tier: Unsupported value: "middle": supported values: "frontend", "backend", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "pattern-miss",
		Object: widget("pattern-miss", "spec:\n  image: nginx\n  memory: 1G\n"),
		Error:  `Widget.admit.test.loom.dev "pattern-miss" is invalid: spec.memory: Invalid value: "1G": spec.memory in body should match '^[0-9]+[MG]i$'`,
	},
	{
		Name:   "nested-pattern-miss",
		Object: widget("nested-pattern-miss", "spec:\n  image: nginx\n  database: {name: db, size: lots}\n"),
		Error:  `Widget.admit.test.loom.dev "nested-pattern-miss" is invalid: spec.database.size: Invalid value: "lots": spec.database.size in body should match '^[0-9]+[MG]i$'`,
	},
	{
		Name:   "above-maximum",
		Object: widget("above-maximum", "spec:\n  image: nginx\n  replicas: 21\n"),
		Error:  `Widget.admit.test.loom.dev "above-maximum" is invalid: spec.replicas: Invalid value: 21: spec.replicas in body should be less than or equal to 20`,
	},
	{
		Name:   "below-minimum",
		Object: widget("below-minimum", "spec:\n  image: nginx\n  replicas: -1\n  minReplicas: -2\n"),
		Error:  `Widget.admit.test.loom.dev "below-minimum" is invalid: spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
	},
	{
		Name:   "exclusive-maximum",
		Object: widget("exclusive-maximum", "spec:\n  image: nginx\n  ratio: 1\n"),
		Error:  `Widget.admit.test.loom.dev "exclusive-maximum" is invalid: spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1`,
	},
	{
		Name:   "min-length",
		Object: widget("min-length", "spec:\n  image: \"\"\n"),
		Error:  `Widget.admit.test.loom.dev "min-length" is invalid: spec.image: Invalid value: "": spec.image in body should be at least 1 chars long`,
	},
	{
		Name:   "max-length",
		Object: widget("max-length", "spec:\n  image: nginx\n  database: {name: a-very-long-name}\n"),
		Error:  `Widget.admit.test.loom.dev "max-length" is invalid: [spec.database.name: Too long: may not be more than 12 bytes, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "min-items",
		Object: widget("min-items", "spec:\n  image: nginx\n  ports: []\n"),
		Error:  `Widget.admit.test.loom.dev "min-items" is invalid: spec.ports: Invalid value: 0: spec.ports in body should have at least 1 items`,
	},
	{
		Name:   "max-items",
		Object: widget("max-items", "spec:\n  image: nginx\n  ports: [1, 2, 3, 4]\n"),
		Error:  `Widget.admit.test.loom.dev "max-items" is invalid: [spec.ports: Too many: 4: must have at most 3 items, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "item-out-of-range",
		Object: widget("item-out-of-range", "spec:\n  image: nginx\n  ports: [80, 0]\n"),
		Error:  `Widget.admit.test.loom.dev "item-out-of-range" is invalid: spec.ports[1]: Invalid value: 0: spec.ports[1] in body should be greater than or equal to 1`,
	},
	{
		Name:   "max-properties",
		Object: widget("max-properties", "spec:\n  image: nginx\n  env: {A: a, B: b, C: c, D: d}\n"),
		Error:  `Widget.admit.test.loom.dev "max-properties" is invalid: [spec.env: Too many: 4: must have at most 3 items, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "required-missing",
		Object: widget("required-missing", "spec:\n  replicas: 2\n"),
		Error:  `Widget.admit.test.loom.dev "required-missing" is invalid: [spec.image: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "nested-required-missing",
		Object: widget("nested-required-missing", "spec:\n  image: nginx\n  database: {size: 2Gi}\n"),
		Error:  `Widget.admit.test.loom.dev "nested-required-missing" is invalid: [spec.database.name: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
	},
	{
		Name:   "set-duplicate",
		Object: widget("set-duplicate", "spec:\n  image: nginx\n  tags: [a, b, a]\n"),
		Error:  `Widget.admit.test.loom.dev "set-duplicate" is invalid: spec.tags[2]: Duplicate value: "a"`,
	},
	{
		Name:   "map-list-duplicate-key",
		Object: widget("map-list-duplicate-key", "spec:\n  image: nginx\n  containers: [{name: app}, {name: app, cpu: 200m}]\n"),
		Error:  `Widget.admit.test.loom.dev "map-list-duplicate-key" is invalid: spec.containers[1]: Duplicate value: {"name":"app"}`,
	},

	// CEL rules.
	{
		Name:   "cel-message",
		Object: widget("cel-message", "spec:\n  image: nginx\n  replicas: 2\n  minReplicas: 3\n"),
		Error:  `Widget.admit.test.loom.dev "cel-message" is invalid: spec: Invalid value: minReplicas must not exceed replicas`,
	},
	{
		Name:   "cel-message-default-counts",
		Object: widget("cel-message-default-counts", "spec:\n  image: nginx\n  minReplicas: 2\n"),
		Error:  `Widget.admit.test.loom.dev "cel-message-default-counts" is invalid: spec: Invalid value: minReplicas must not exceed replicas`,
	},
	{
		Name:   "cel-has",
		Object: widget("cel-has", "spec:\n  image: nginx\n  tier: backend\n"),
		Error:  `Widget.admit.test.loom.dev "cel-has" is invalid: spec: Invalid value: a backend needs a database`,
	},
	{
		Name:   "cel-message-expression",
		Object: widget("cel-message-expression", "spec:\n  image: nginx\n  host: web.example.org\n"),
		Error:  `Widget.admit.test.loom.dev "cel-message-expression" is invalid: spec.host: Invalid value: "web.example.org": host web.example.org is not under example.com`,
	},
	{
		Name:   "cel-field-path-reason",
		Object: widget("cel-field-path-reason", "spec:\n  image: nginx\n  owner: root\n"),
		Error:  `Widget.admit.test.loom.dev "cel-field-path-reason" is invalid: spec.owner: Forbidden: root may not own a widget`,
	},
	{
		Name:   "cel-on-field",
		Object: widget("cel-on-field", "spec:\n  image: nginx\n  window: {start: 5, end: 2}\n"),
		Error:  `Widget.admit.test.loom.dev "cel-on-field" is invalid: spec.window: Invalid value: a window must start before it ends`,
	},
	{
		Name:   "cel-and-schema-errors",
		Object: widget("cel-and-schema-errors", "spec:\n  image: nginx\n  memory: 1G\n  replicas: 2\n  minReplicas: 3\n"),
		Error:  `Widget.admit.test.loom.dev "cel-and-schema-errors" is invalid: [spec.memory: Invalid value: "1G": spec.memory in body should match '^[0-9]+[MG]i$', spec: Invalid value: minReplicas must not exceed replicas]`,
	},

	// Metadata.
	{
		Name:   "name-not-dns-subdomain",
		Object: widget("Web_1", "spec:\n  image: nginx\n"),
		Error:  `Widget.admit.test.loom.dev "Web_1" is invalid: metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
	},
	{
		Name:   "bad-label",
		Object: "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata:\n  name: bad-label\n  labels: {app: \"not ok\"}\nspec:\n  image: nginx\n",
		Error:  `Widget.admit.test.loom.dev "bad-label" is invalid: metadata.labels: Invalid value: "not ok": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
	},

	{
		Name:   "generate-name",
		Object: "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata:\n  generateName: web-\nspec:\n  image: nginx\n",
		Stored: widget("", "spec:\n  image: nginx"+widgetDefaults+"\n"),
	},
	{
		Name:   "metadata-wrong-type",
		Object: "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata:\n  name: metadata-wrong-type\n  labels: 5\nspec:\n  image: nginx\n",
		Error:  `Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type map[string]string`,
	},

	// A cluster-scoped kind without the status subresource.
	{
		Name:   "gadget-defaults",
		Object: gadget("gadget-defaults", ""),
		Stored: gadget("", "spec:\n  size: 3\n  limits: {cpu: 1, memory: 256}\n"),
	},
	{
		Name:     "gadget-status-kept",
		Object:   gadget("gadget-status-kept", "spec:\n  size: 1\n  port: http\n  values: [1, {a: b}]\nstatus:\n  phase: Ready\n  extra: pruned\n"),
		Stored:   gadget("", "spec:\n  size: 1\n  port: http\n  values: [1, {a: b}]\n  limits: {cpu: 1, memory: 256}\nstatus:\n  phase: Ready\n"),
		Warnings: []string{`unknown field "status.extra"`},
	},
	{
		Name:   "gadget-status-validated",
		Object: gadget("gadget-status-validated", "status:\n  phase: Gone\n"),
		Error:  `Gadget.admit.test.loom.dev "gadget-status-validated" is invalid: status.phase: Unsupported value: "Gone": supported values: "Pending", "Ready"`,
	},
	{
		Name:   "gadget-int-or-string",
		Object: gadget("gadget-int-or-string", "spec:\n  port: true\n"),
		Error:  `Gadget.admit.test.loom.dev "gadget-int-or-string" is invalid: spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
	},
	{
		Name:     "gadget-embedded-resource",
		Object:   gadget("gadget-embedded-resource", "spec:\n  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: cm, color: red}\n    data: {a: b}\n"),
		Stored:   gadget("", "spec:\n  size: 3\n  limits: {cpu: 1, memory: 256}\n  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: cm}\n    data: {a: b}\n"),
		Warnings: []string{`unknown field "spec.template.metadata.color"`},
	},
	{
		Name:   "gadget-namespace-ignored",
		Object: "apiVersion: admit.test.loom.dev/v1\nkind: Gadget\nmetadata:\n  name: gadget-namespace-ignored\n  namespace: somewhere\n",
		Stored: gadget("", "spec:\n  size: 3\n  limits: {cpu: 1, memory: 256}\n"),
	},
	{
		// The API server does not hold an embedded resource's name to
		// the rules of its kind.
		Name:   "gadget-embedded-resource-any-name",
		Object: gadget("gadget-embedded-resource-any-name", "spec:\n  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: Bad_Name}\n"),
		Stored: gadget("", "spec:\n  size: 3\n  limits: {cpu: 1, memory: 256}\n  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: Bad_Name}\n"),
	},
	{
		Name:   "gadget-embedded-resource-invalid",
		Object: gadget("gadget-embedded-resource-invalid", "spec:\n  template:\n    metadata: {name: Bad_Name}\n"),
		Error:  `Gadget.admit.test.loom.dev "gadget-embedded-resource-invalid" is invalid: [spec.template.apiVersion: Required value, spec.template.kind: Required value]`,
	},
}
