package crd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kptr "k8s.io/utils/ptr"

	"github.com/loom-operator/loom/engine/config"
)

// parse is config.Parse that fails the test.
func parse(t *testing.T, src string) config.Config {
	t.Helper()
	c, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatalf("config.Parse() = %v", err)
	}
	return c
}

// A set of several versions gets one CRD version each, in VersionNames'
// order, with its own schema, the storage flag on exactly the storage
// version, deprecation, and webhook conversion.
func TestGenerateVersions(t *testing.T) {
	c := testSets(t)["versions"]
	def, err := Generate(c)
	if err != nil {
		t.Fatalf("Generate() = %v", err)
	}
	type row struct {
		Name                  string
		Served, Storage, Depr bool
		Warning               string
		Field                 string // a spec field only this version has
		Status                bool
		Columns               int
	}
	var got []row
	for _, v := range def.Spec.Versions {
		r := row{Name: v.Name, Served: v.Served, Storage: v.Storage, Depr: v.Deprecated, Warning: kptr.Deref(v.DeprecationWarning, ""),
			Status: v.Subresources != nil && v.Subresources.Status != nil, Columns: len(v.AdditionalPrinterColumns)}
		for _, f := range []string{"memory", "resources"} {
			if _, ok := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties[f]; ok {
				r.Field = f
			}
		}
		got = append(got, r)
	}
	want := []row{
		{Name: "v1", Served: true, Field: "resources", Status: true, Columns: 4},
		{Name: "v1alpha1", Served: true, Storage: true, Depr: true, Warning: "gen.test.loom.dev/v1alpha1 Shop is deprecated; use v1", Field: "memory", Status: true, Columns: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	wantConv := &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter, Webhook: &apiextv1.WebhookConversion{
		ClientConfig:             &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "loom-system", Name: "loom-webhook", Path: kptr.To("/convert"), Port: kptr.To[int32](443)}},
		ConversionReviewVersions: []string{"v1"},
	}}
	if diff := cmp.Diff(wantConv, def.Spec.Conversion); diff != "" {
		t.Errorf("conversion (-want +got):\n%s", diff)
	}
}

// One version: no conversion at all, as before versions existed.
func TestGenerateOneVersionHasNoConversion(t *testing.T) {
	def, err := Generate(testSets(t)["compact"])
	if err != nil {
		t.Fatal(err)
	}
	if def.Spec.Conversion != nil || len(def.Spec.Versions) != 1 {
		t.Errorf("one-version set: conversion %v, %d versions; want none and 1", def.Spec.Conversion, len(def.Spec.Versions))
	}
}

// Versions that differ only in name, with no conversion rules, need no
// webhook: the API server changes apiVersion (strategy None).
func TestGenerateSameSchemasConvertWithoutWebhook(t *testing.T) {
	c := parse(t, `parent: {apiVersion: gen.test.loom.dev/v1, kind: Shop}
schema: {spec: {image: string}}
versions:
- {name: v1alpha1, schema: {spec: {image: string}}}
`)
	def, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	want := &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
	if diff := cmp.Diff(want, def.Spec.Conversion); diff != "" {
		t.Errorf("conversion (-want +got):\n%s", diff)
	}
	// A move makes it a webhook again, schemas alike or not.
	c.Versions[0].Conversion.Moves = []config.Move{{Default: &config.Default{Path: "spec.image", Value: "nginx"}}}
	if def, err = Generate(c); err != nil {
		t.Fatal(err)
	}
	if def.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		t.Errorf("with a move: strategy %s, want Webhook", def.Spec.Conversion.Strategy)
	}
}

// The webhook's clientConfig comes from Options (or SetWebhook), with its
// caBundle; the CRD still passes the API server's validation.
func TestGenerateWebhookOptions(t *testing.T) {
	c := testSets(t)["versions"]
	tests := []struct {
		name string
		hook WebhookConfig
		want apiextv1.WebhookClientConfig
	}{
		{"url", WebhookConfig{URL: "https://127.0.0.1:9443/convert", CABundle: []byte("PEM")},
			apiextv1.WebhookClientConfig{URL: kptr.To("https://127.0.0.1:9443/convert"), CABundle: []byte("PEM")}},
		{"service", WebhookConfig{Service: &WebhookService{Namespace: "ops", Name: "loom", Port: 8443}},
			apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "ops", Name: "loom", Port: kptr.To[int32](8443), Path: kptr.To("/convert")}}},
		{"service default port and path", WebhookConfig{Service: &WebhookService{Namespace: "ops", Name: "loom"}},
			apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "ops", Name: "loom", Port: kptr.To[int32](443), Path: kptr.To("/convert")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, err := GenerateWith(c, Options{Webhook: &tt.hook})
			if err != nil {
				t.Fatalf("GenerateWith() = %v", err)
			}
			if diff := cmp.Diff(&tt.want, def.Spec.Conversion.Webhook.ClientConfig); diff != "" {
				t.Errorf("clientConfig (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := GenerateWith(c, Options{Webhook: &WebhookConfig{URL: "http://127.0.0.1/convert"}}); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("an http URL: %v, want the API server's refusal (https only)", err)
	}
	if _, err := GenerateWith(c, Options{Webhook: &WebhookConfig{URL: "https://a/convert", Service: &WebhookService{Namespace: "a", Name: "b"}}}); err == nil || !strings.Contains(err.Error(), "either a URL or a Service") {
		t.Errorf("URL and Service: %v, want an error", err)
	}
}

// A printer column must lead to a field in every version; the error names
// the version that lacks it.
func TestGenerateColumnMissingInAVersion(t *testing.T) {
	c := parse(t, `parent: {apiVersion: gen.test.loom.dev/v1, kind: Shop, printerColumns: [{name: Mem, type: string, jsonPath: .spec.resources.memory}]}
schema: {spec: {resources: {memory: string}}}
versions:
- name: v1alpha1
  schema: {spec: {memory: string}}
  conversion: {moves: [{rename: {from: spec.memory, to: spec.resources.memory}}]}
`)
	_, err := Generate(c)
	want := `parent.printerColumns[0] (Mem): version v1alpha1: jsonPath ".spec.resources.memory": resources is not in the schema`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Generate() = %v, want an error starting %q", err, want)
	}
}
