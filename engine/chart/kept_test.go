package chart

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"
)

// hookChart is a webhook chart written for these tests: htpasswd in a
// Secret (and in a range over an empty default), a CA and a certificate
// signed by it in another.
var hookChart = filepath.Join("testdata", "charts", "hook")

// generatedValue matches what the hook chart's generating functions
// write: a bcrypt hash, base64 of PEM (certificates, keys), and PEM in a
// quoted YAML string.
var generatedValue = regexp.MustCompile(`\$2a\$10\$[./A-Za-z0-9]{53}|"[A-Za-z0-9+/]{200,}={0,2}"|-----BEGIN [A-Z ]+-----(\\n[A-Za-z0-9+/=]+)+\\n-----END [A-Z ]+-----`)

// maskGenerated replaces each generated value in files with a mark.
func maskGenerated(files map[string]string) map[string]string {
	out := map[string]string{}
	for name, text := range files {
		out[name] = generatedValue.ReplaceAllString(text, "<generated>")
	}
	return out
}

// renderKept renders dir with a seed and kept values, in a process of
// its own (a new Load).
func renderKept(t *testing.T, dir string, values map[string]any, seed []byte, kept map[string]string) (map[string]string, map[string]string) {
	t.Helper()
	c, _, err := Load(os.DirFS(filepath.Dir(dir)), filepath.Base(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Render(values, Env{Release: Release{Name: "shop", Namespace: "team-a", Revision: 1, IsInstall: true}, Seed: seed, Kept: kept})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range res.Files {
		out[f.Name] = f.Text
	}
	return out, res.Generated
}

// A chart that calls htpasswd and makes a CA and a certificate renders
// as Helm 4's SDK renders it, but for the generated values themselves,
// with values that work: the hash checks the password, the certificate
// is signed by the CA and names the service.
func TestGeneratingFunctionsAgreeWithHelm(t *testing.T) {
	rel := Release{Name: "shop", Namespace: "team-a", Revision: 1, IsInstall: true}
	for _, values := range []string{"", "extraUsers: [{name: ops, password: pw}]\nsshKey: true\n"} {
		want, err := helmRender(t, hookChart, readValues(t, values), rel)
		if err != nil {
			t.Fatal(err)
		}
		got, gen := renderKept(t, hookChart, readValues(t, values), []byte("seed"), nil)
		if diff := cmp.Diff(maskGenerated(want), maskGenerated(got)); diff != "" {
			t.Errorf("values %q: output differs from Helm's (-helm +loom):\n%s", values, diff)
		}
		if n := strings.Count(maskGenerated(got)["hook/templates/webhook.yaml"], "<generated>"); n != 4 {
			t.Errorf("values %q: %d generated values in webhook.yaml, want 4:\n%s", values, n, got["hook/templates/webhook.yaml"])
		}
		if len(gen) == 0 {
			t.Errorf("values %q: no generated values returned", values)
		}
	}

	files, _ := renderKept(t, hookChart, nil, []byte("seed"), nil)
	var auth struct{ StringData map[string]string }
	if err := yaml.Unmarshal([]byte(files["hook/templates/auth.yaml"]), &auth); err != nil {
		t.Fatal(err)
	}
	user, hash, _ := strings.Cut(auth.StringData["auth"], ":")
	if user != "admin" || bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret")) != nil {
		t.Errorf("htpasswd line %q does not check admin's password", auth.StringData["auth"])
	}
	tls := tlsOf(t, files["hook/templates/webhook.yaml"])
	pool := x509.NewCertPool()
	pool.AddCert(tls["ca.crt"])
	if _, err := tls["tls.crt"].Verify(x509.VerifyOptions{Roots: pool, DNSName: "shop-hook.team-a.svc"}); err != nil {
		t.Errorf("the certificate does not verify against the CA for the service's name: %v", err)
	}
}

// tlsOf decodes the certificates of the hook chart's TLS Secret.
func tlsOf(t *testing.T, text string) map[string]*x509.Certificate {
	t.Helper()
	var secret struct{ Data map[string]string }
	if err := yaml.Unmarshal([]byte(strings.SplitN(text, "\n---", 2)[0]), &secret); err != nil {
		t.Fatal(err)
	}
	out := map[string]*x509.Certificate{}
	for _, k := range []string{"ca.crt", "tls.crt"} {
		b, err := base64.StdEncoding.DecodeString(secret.Data[k])
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(b)
		if block == nil {
			t.Fatalf("%s is not PEM", k)
		}
		if out[k], err = x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The generated values a render returns, given back to a render with the
// same seed (another process: a new Load), are the values it renders:
// the same files, byte for byte. A call whose inputs change gets a new
// value, the others keep theirs; another seed makes new values.
func TestGeneratingFunctionsKeepTheirValues(t *testing.T) {
	seed := []byte("seed-of-a")
	first, kept := renderKept(t, hookChart, nil, seed, nil)
	if len(kept) != 3 { // htpasswd, genCA, genSignedCert
		t.Fatalf("%d generated values, want 3: %v", len(kept), keysOf(kept))
	}
	for k := range kept {
		if !strings.HasPrefix(k, GeneratedKeyPrefix) || !regexp.MustCompile(`^[-._a-zA-Z0-9]+$`).MatchString(k) {
			t.Errorf("key %q is not a Secret's data key starting with %q", k, GeneratedKeyPrefix)
		}
	}
	again, keptAgain := renderKept(t, hookChart, nil, seed, kept)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("a render with the kept values differs (-first +again):\n%s", diff)
	}
	if diff := cmp.Diff(kept, keptAgain); diff != "" {
		t.Errorf("the generated values changed (-first +again):\n%s", diff)
	}

	// A new password: a new htpasswd line, the same certificates.
	edited, keptEdited := renderKept(t, hookChart, readValues(t, "auth: {password: other}"), seed, kept)
	if edited["hook/templates/auth.yaml"] == first["hook/templates/auth.yaml"] {
		t.Error("a new password kept the old hash")
	}
	if edited["hook/templates/webhook.yaml"] != first["hook/templates/webhook.yaml"] {
		t.Error("a new password made new certificates")
	}
	if len(keptEdited) != 3 {
		t.Errorf("generated values after the edit: %v", keysOf(keptEdited))
	}

	// A longer validity: a new CA, so a new certificate signed by it.
	longer, _ := renderKept(t, hookChart, readValues(t, "webhook: {days: 730}"), seed, kept)
	if tlsOf(t, longer["hook/templates/webhook.yaml"])["ca.crt"].Equal(tlsOf(t, first["hook/templates/webhook.yaml"])["ca.crt"]) {
		t.Error("a new validity kept the old CA")
	}

	// Another seed (another parent, or a seed that was lost): new values.
	other, _ := renderKept(t, hookChart, nil, []byte("seed-of-b"), kept)
	if other["hook/templates/webhook.yaml"] == first["hook/templates/webhook.yaml"] || other["hook/templates/auth.yaml"] == first["hook/templates/auth.yaml"] {
		t.Error("another seed rendered the kept values of the first")
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A render that would make more than MaxGenerated values (a loop over
// the values, say) fails at the call's line instead of filling the
// parent's seed Secret past what the API server takes.
func TestGeneratingFunctionsAreBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "many")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: many\nversion: 0.1.0\n",
		"templates/secret.yaml":  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n  {{- range $i := until (int .Values.n) }}\n  k{{ $i }}: {{ genPrivateKey \"ed25519\" | quote }}\n  {{- end }}\n",
		"templates/_helpers.tpl": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := Load(os.DirFS(filepath.Dir(dir)), "many", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Render(map[string]any{"n": float64(MaxGenerated)}, Env{Seed: []byte("s")}); err != nil {
		t.Errorf("%d values: %v", MaxGenerated, err)
	}
	_, err = c.Render(map[string]any{"n": float64(MaxGenerated + 1)}, Env{Seed: []byte("s")})
	if err == nil || !strings.Contains(err.Error(), "many/templates/secret.yaml:7") || !strings.Contains(err.Error(), "more than 100 keys") {
		t.Errorf("%d values: err %v, want one at many/templates/secret.yaml:7", MaxGenerated+1, err)
	}
}
