//go:build e2e

package e2e

import (
	"fmt"
	"strings"
)

// The rows of TestBadInputMatrix.

// docStart is the needle of an error about a whole document: such errors
// name the line where the document starts, which for the first document
// of a file is line 1, forBad's guard.
const docStart = `{{- if eq .Name "bad" }}`

// forBad wraps a template so that it renders only for the parent named
// "bad": the good parent beside it renders as before.
func forBad(body string) string { return docStart + "\n" + body + "{{- end }}\n" }

// configMapFor is a ConfigMap template for the bad parent whose data is
// data (YAML, indented two spaces).
func configMapFor(data string) string {
	return forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\ndata:\n" + data)
}

// templateCases are templates that fail for one parent: the set loads,
// and rendering (or applying what was rendered) fails for that parent only.
func templateCases() []badCase {
	bad := func(name, body string, reason string, at string, texts ...string) badCase {
		c := badCase{name: name, files: map[string]string{"bad.yaml": body}, reason: reason, texts: texts}
		if at != "" {
			c.at = location{"bad.yaml", at}
		}
		return c
	}
	return []badCase{
		// The shipped set's schema knows spec.memory and spec.config, which
		// the bad parent leaves out (a field it does not know is refused
		// when the set loads).
		bad("required value missing", configMapFor(`  memory: {{ required "spec.memory is required" .Spec.memory }}`+"\n"),
			"RenderFailed", "required", "spec.memory is required"),
		bad("fail with a message", forBad(`{{ fail "parents named bad are not allowed" }}`+"\n"),
			"RenderFailed", "fail", "parents named bad are not allowed"),
		bad("fail with bytes that are not UTF-8", forBad(`{{ fail "bad byte \xff here" }}`+"\n"),
			"RenderFailed", "fail", "bad byte \uFFFD here"),
		bad("invalid YAML produced", configMapFor("  key: [unclosed\n"),
			"RenderFailed", "[unclosed", "invalid YAML", "did not find expected"),
		bad("a tab in the YAML produced", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: {{ .Name }}-extra\n"),
			"RenderFailed", docStart, "invalid YAML", "found character that cannot start any token"),
		bad("a document that is a list", forBad("- just\n- a list\n"),
			"RenderFailed", docStart, "a document must be a YAML mapping"),
		bad("a value of the wrong type", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\ndata: # of strings\n  nested: {a: b}\n"),
			"RenderFailed", "of strings", "ConfigMap bad-extra", "data: must be string, not object"),
		bad("no kind", forBad("apiVersion: v1\nmetadata:\n  name: {{ .Name }}-extra\n"),
			"RenderFailed", docStart, "kind: required"),
		bad("no apiVersion", forBad("kind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n"),
			"RenderFailed", docStart, "apiVersion: required"),
		bad("no name", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n"),
			"RenderFailed", docStart, "metadata.name: required"),
		bad("a drift mode with a typo", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  annotations: {loom.dev/drift: wran}\n"),
			"RenderFailed", "loom.dev/drift: wran", `annotation loom.dev/drift is "wran"`, `did you mean "warn"`),
		bad("a drift-ignore path the template does not set", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  annotations: {loom.dev/drift-ignore: data.lvl}\ndata: {level: \"1\"}\n"),
			"RenderFailed", "loom.dev/drift-ignore", `"data.lvl" names no field the template sets`, `did you mean "data.level"`),
		bad("an invalid name", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}_Extra!\n"),
			"RenderFailed", "_Extra!", `invalid name "bad_Extra!"`),
		bad("two children of one kind and name", configMapFor("  a: b\n---\napiVersion: v1 # the same ConfigMap again\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n"),
			"RenderFailed", "again", `ConfigMap "bad-extra" is also rendered by bad.yaml:1 (document 1)`),
		bad("a cluster-scoped child", forBad("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Name }}-extra\n"),
			"RenderFailed", docStart, "ClusterRole.rbac.authorization.k8s.io is cluster-scoped: a namespaced parent cannot own it unless its set declares the kind in loom.yaml's clusterScoped"),
		bad("a child in another namespace", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  namespace: kube-system\n"),
			"RenderFailed", docStart, `metadata.namespace is "kube-system", but children must live in their parent's namespace`),
		bad("an unknown field of a built-in kind", forBad("apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Name }}-extra\nspec:\n  ports: [{port: 80}]\n  selectr: {a: b}\n"),
			"RenderFailed", "selectr", `unknown field "spec.selectr"`),
		bad("another controller in ownerReferences", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: other, uid: \"1234\", controller: true}]\n"),
			"RenderFailed", docStart, "metadata.ownerReferences names a controller (ConfigMap other)"),
		bad("a computed typo in the manage annotation", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  annotations:\n    loom.dev/manage: {{ \"create-once\" }}\n"),
			"RenderFailed", docStart, `loom.dev/manage is "create-once"`, `did you mean "create-only"?`),
		bad("a patch child of a kind lookups do not declare", forBad("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-extra\n  annotations:\n    loom.dev/manage: patch\nstringData: {a: b}\n"),
			"RenderFailed", docStart, "loom.dev/manage is patch: Loom reads this child as a lookup, so loom.yaml's lookups must declare v1 Secret"),
		bad("a label reserved for Loom", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  labels: {applyset.kubernetes.io/part-of: someone-else}\n"),
			"RenderFailed", docStart, "label applyset.kubernetes.io/part-of is reserved for Loom"),
		{name: "include that includes itself", files: map[string]string{
			"_loop.tpl": `{{- define "loop" }}{{ include "loop" . }}{{ end }}` + "\n",
			"bad.yaml":  configMapFor(`  a: {{ include "loop" . | quote }}` + "\n"),
		}, reason: "RenderFailed", at: location{"_loop.tpl", "loop"}, texts: []string{`include "loop": nesting deeper than 1000`}},
		bad("tpl that calls itself", configMapFor(`  a: {{ $t := "{{ tpl . . }}" }}{{ tpl $t $t | quote }}`+"\n"),
			"RenderFailed", "tpl $t", "tpl: nesting deeper than 1000"),
		bad("output over the size cap", configMapFor("  a: |\n{{- range until 40000 }}\n    {{ repeat 1000 \"x\" }}\n{{- end }}\n"),
			"RenderFailed", "repeat", "wrote more than 32 MiB for one parent"),
		bad("a loop over ten million numbers", configMapFor("  a: |\n{{- range until 10000000 }}\n    x\n{{- end }}\n"),
			"RenderFailed", "until", "until would make 10000000 items, over the cap"),
		bad("toYaml of a value JSON cannot hold", configMapFor(`  a: {{ toYaml (dict "ratio" (float64 "NaN")) | quote }}`+"\n"),
			"RenderFailed", "toYaml", "toYaml", "unsupported value: NaN"),
		bad("a function that panics", configMapFor(`  a: {{ div 10 0 | quote }}`+"\n"),
			"RenderFailed", "div", "integer divide by zero"),
		bad("range over a string", configMapFor("  {{- range $k, $v := .Spec.image }}\n  {{ $k }}: {{ $v }}\n  {{- end }}\n"),
			"RenderFailed", "range", "range can't iterate over nginx:1.27"),
		bad("len of a missing key", configMapFor(`  n: {{ len .Spec.config | quote }}`+"\n"),
			"RenderFailed", "len", "len of nothing: the value is missing"),
		bad("index out of range", configMapFor(`  a: {{ index (list 1 2) 5 | quote }}`+"\n"),
			"RenderFailed", "index", "index out of range: 5"),
		bad("Secret data that is not base64", forBad("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-extra\ndata:\n  password: not base64!\n"),
			"RenderFailed", "password", "Secret bad-extra", "data.password: illegal base64 data"),
		bad("a label value the API server refuses", forBad("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  labels: {tier: \"not valid!\"}\n"),
			"ApplyFailed", "", "apply ConfigMap bad-extra", "metadata.labels", "not valid!"),
		bad("a kind the cluster does not serve", forBad("apiVersion: nothere.loom.dev/v1\nkind: Gadget\nmetadata:\n  name: {{ .Name }}-extra\n"),
			"ApplyFailed", "", "apply Gadget bad-extra: kind Gadget (nothere.loom.dev/v1) is not served by the cluster"),
	}
}

// statusTemplateCases are status templates that fail for one parent: that
// parent's status is degraded, but its children are applied and it still
// becomes Ready.
func statusTemplateCases() []badCase {
	status := func(name, body, at string, texts ...string) badCase {
		return badCase{name: name, files: map[string]string{"status.yaml": shippedStatus + forBad(body)},
			reason: "StatusTemplateFailed", at: location{"status.yaml", at}, texts: texts, alsoReady: true}
	}
	return []badCase{
		status("status template fails", `{{ fail "no URL for bad" }}`+"\n", "fail", "status template failed", "no URL for bad"),
		status("status template sets a field Loom owns", "state: Hacked\n", "state:", "status.state is Loom's own"),
		status("status template writes invalid YAML", "url: [unclosed\n", "[unclosed", "status template failed", "invalid YAML"),
	}
}

// shippedStatus is the shipped set's status.yaml.
const shippedStatus = `{{- $svc := dig "Service" .Name dict .Children }}
{{- if $svc }}
url: http://{{ $svc.metadata.name }}.{{ $svc.metadata.namespace }}.svc.cluster.local:{{ (index $svc.spec.ports 0).port }}
{{- end }}
`

// specCases are parents whose spec the templates render but a child
// cannot hold, or the templates do not expect, or the CRD refuses.
func specCases() []badCase {
	widget := func(name, spec, reason string, at location, texts ...string) badCase {
		return badCase{name: name, set: widgetSet, spec: spec, reason: reason, at: at, texts: texts}
	}
	deployment := func(needle string) location { return location{"deployment.yaml", needle} }
	refused := func(name, spec, err string) badCase {
		return badCase{name: name, spec: spec, refused: err}
	}
	big := strings.Repeat("x", 1100*1024)
	return []badCase{
		widget("negative replicas", `{"image":"nginx","replicas":-1}`, "ApplyFailed", location{},
			"apply Deployment bad", "spec.replicas", "must be greater than or equal to 0"),
		widget("an invalid label value", `{"image":"nginx","tier":"not valid!"}`, "ApplyFailed", location{},
			"apply Deployment bad", "metadata.labels", "not valid!"),
		widget("a port out of range", `{"image":"nginx","port":70000}`, "ApplyFailed", location{},
			"apply Service bad", "spec.ports[0].port", "between 1 and 65535"),
		widget("a config key no ConfigMap allows", `{"image":"nginx","config":{"bad key!":"x"}}`, "ApplyFailed", location{},
			"apply ConfigMap bad-config", "bad key!", "a valid config key"),
		widget("replicas as a string", `{"image":"nginx","replicas":"three"}`, "RenderFailed", deployment("replicas:"),
			"spec.replicas: must be int32, not string"),
		widget("replicas as a fraction", `{"image":"nginx","replicas":1.5}`, "RenderFailed", deployment("replicas:"),
			"spec.replicas: must be int32, not number 1.5"),
		widget("replicas over int32", `{"image":"nginx","replicas":10000000000}`, "RenderFailed", deployment("replicas:"),
			"spec.replicas: must be int32, not number 10000000000"),
		widget("memory that is not a quantity", `{"image":"nginx","memory":"lots"}`, "RenderFailed", deployment("memory:"),
			"memory", "quantities must match the regular expression"),
		widget("config that is a string", `{"image":"nginx","config":"a=b"}`, "RenderFailed", location{"configmap.yaml", "range"},
			"range can't iterate over a=b"),
		widget("an empty spec", `{}`, "RenderFailed", deployment("required"), "spec.image is required"),
		{name: "config over a ConfigMap's 1 MiB", spec: fmt.Sprintf(`{"image":"nginx","config":{"blob":%q}}`, big),
			reason: "ApplyFailed", texts: []string{"apply ConfigMap bad-config", "Too long"}},
		{name: "a name with a dot, which a Service cannot have", parent: "bad.v2", spec: `{"image":"nginx"}`,
			reason: "RenderFailed", at: location{"service.yaml", "name:"}, texts: []string{`invalid name "bad.v2"`}},
		{name: "a name too long for a Service", parent: "bad" + strings.Repeat("x", 61), spec: `{"image":"nginx"}`,
			reason: "RenderFailed", at: location{"service.yaml", "name:"}, texts: []string{"must be no more than 63 characters"}},
		refused("negative replicas refused by the CRD", `{"image":"nginx","replicas":-1}`, "should be greater than or equal to 0"),
		refused("memory refused by the CRD", `{"image":"nginx","memory":"lots"}`, "spec.memory in body should match"),
		refused("a port refused by the CRD", `{"image":"nginx","port":70000}`, "should be less than or equal to 65535"),
		refused("a config key refused by the CRD's rule", `{"image":"nginx","config":{"bad key!":"x"}}`, "config keys must be valid ConfigMap keys"),
		refused("an empty image refused by the CRD", `{"image":""}`, "should be at least 1 chars long"),
	}
}

// setCases are edits after which the set no longer loads: its last good
// version keeps working, and the failure is an Event on the CRD. One more
// is a second set that never loads, beside a good one.
func setCases() []badCase {
	broken := func(name, file, content, at string, texts ...string) badCase {
		c := badCase{name: name, breakSet: map[string]string{file: content}, texts: texts}
		if at != "" {
			c.at = location{file, at}
		}
		return c
	}
	const parent = "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: MyResource\n"
	return []badCase{
		broken("loom.yaml is not YAML", "loom.yaml", "parent: [unclosed\n", "", "loom.yaml", "invalid set config"),
		broken("loom.yaml has an unknown field", "loom.yaml", parent+"readyness: []\n", "", "loom.yaml", `unknown field "readyness"`),
		broken("loom.yaml names no parent kind", "loom.yaml", "parent:\n  apiVersion: example.loom.dev/v1alpha1\n", "",
			"loom.yaml", "parent.apiVersion and parent.kind are required"),
		broken("loom.yaml has a bad parent apiVersion", "loom.yaml", "parent:\n  apiVersion: a/b/c\n  kind: MyResource\n", "",
			"loom.yaml", "parent.apiVersion", "a/b/c"),
		broken("a readiness rule without a kind", "loom.yaml", parent+"readiness:\n- condition: Ready\n", "",
			"loom.yaml", "readiness[0].kind is required"),
		broken("a readiness rule without condition or ignore", "loom.yaml", parent+"readiness:\n- kind: Deployment\n", "",
			"loom.yaml", "readiness[0] needs condition or ignore"),
		broken("loom.yaml names a status template that is not there", "loom.yaml", parent+"status: nothere.yaml\n", "",
			"loom.yaml", "status template", "nothere.yaml"),
		broken("a scale subresource without a status template", "loom.yaml",
			parent+"schema:\n  spec: {image: string, replicas: integer, memory: string, port: integer, config: \"map[string]string\"}\n"+
				"  scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}\n", "",
			"loom.yaml", "schema.scale: a set with a scale subresource needs a status template (status:) that writes .status.replicas"),
		broken("a scale subresource on a spec field that is not an integer", "loom.yaml",
			parent+"status: status.yaml\nschema:\n  spec: {image: string, replicas: string, memory: string, port: integer, config: \"map[string]string\"}\n"+
				"  scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}\n", "",
			"loom.yaml", "schema.scale.specReplicasPath: .spec.replicas is a string in the schema; the replicas are an integer"),
		broken("a template that does not parse", "bad.yaml", "apiVersion: v1\n{{ if }}\n", "{{ if }}", "missing value for if"),
		broken("a template that calls an unknown function", "bad.yaml", "a: {{ nosuchfunc 1 }}\n", "nosuchfunc", `function "nosuchfunc" not defined`),
		broken("a template that calls now", "bad.yaml", "a: b\nc: {{ now | date \"2006\" }}\n", "{{ now",
			"template uses now, whose value differs on every render", "in a loop"),
		broken("an action left open", "bad.yaml", "a: b\nc: {{ .Name\n", "{{ .Name", "unclosed action"),
		{name: "a second set that never loads", brokenSet: map[string]string{"loom.yaml": "parent: [unclosed\n", "a.yaml": "a: b\n"}},
		broken("a partial that renders text", "_bad.tpl", "stray text\n", "", "_bad.tpl:1", "a partial may only hold define blocks"),
		broken("a typo in the manage annotation", "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n  annotations:\n    loom.dev/manage: craete-only\n",
			"craete-only", `loom.dev/manage is "craete-only"`, `did you mean "create-only"?`),
		broken("an observed child with fields", "bad.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\nmetadata:\n  name: {{ .Name }}-extra\n  annotations:\n    loom.dev/manage: observe\n",
			"data:", "Loom never writes this child", "not data"),
		broken("loom.yaml's manage has a typo", "loom.yaml", parent+"manage: obsreve\n", "",
			"loom.yaml", `manage is "obsreve"`, `did you mean "observe"?`),
	}
}
