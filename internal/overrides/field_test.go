package overrides

import (
	"encoding/json"
	"strings"
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// configMap holds the given data as strings, e.g. configMap(t, "config.yaml", "a: 1\n").
func configMap(t *testing.T, kv ...string) string {
	t.Helper()
	data := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		data[kv[i]] = kv[i+1]
	}
	d, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": "default"}, "data": ` + string(d) + `}`
}

func TestFieldOverrider(t *testing.T) {
	const appYAML = "server:\n  port: 8080\n  host: 0.0.0.0\nlogLevel: info\nfeatures:\n- a\n- b\n"
	const appJSON = `{"server":{"port":8080,"banner":"<b>hi</b>"},"logLevel":"info"}`
	tests := []struct {
		name     string
		template string
		field    policyv1alpha1.FieldOverrider
		want     string
	}{
		{
			name:     "YAML replace changes one key and keeps the others",
			template: configMap(t, "config.yaml", appYAML, "other", "untouched"),
			field: policyv1alpha1.FieldOverrider{FieldPath: "/data/config.yaml", YAML: []policyv1alpha1.YAMLPatchOperation{
				{SubPath: "/server/port", Operator: "replace", Value: raw(`9090`)}}},
			// Keys come back sorted, as YAML round-trips through JSON.
			want: configMap(t, "config.yaml", "features:\n- a\n- b\nlogLevel: info\nserver:\n  host: 0.0.0.0\n  port: 9090\n", "other", "untouched"),
		},
		{
			name:     "YAML add, remove and replace in order",
			template: configMap(t, "config.yaml", appYAML),
			field: policyv1alpha1.FieldOverrider{FieldPath: "/data/config.yaml", YAML: []policyv1alpha1.YAMLPatchOperation{
				{SubPath: "/features/-", Operator: "add", Value: raw(`"c"`)},
				{SubPath: "/features/0", Operator: "remove"},
				{SubPath: "/logLevel", Operator: "replace", Value: raw(`"debug"`)},
				{SubPath: "/server/tls", Operator: "add", Value: raw(`{"enabled": true}`)},
			}},
			want: configMap(t, "config.yaml", "features:\n- b\n- c\nlogLevel: debug\nserver:\n  host: 0.0.0.0\n  port: 8080\n  tls:\n    enabled: true\n"),
		},
		{
			name:     "JSON comes back compact, in key order, without HTML escaping",
			template: configMap(t, "config.json", appJSON),
			field: policyv1alpha1.FieldOverrider{FieldPath: "/data/config.json", JSON: []policyv1alpha1.JSONPatchOperation{
				{SubPath: "/server/port", Operator: "replace", Value: raw(`9090`)},
				{SubPath: "/replicas", Operator: "add", Value: raw(`3`)},
			}},
			want: configMap(t, "config.json", `{"server":{"port":9090,"banner":"<b>hi</b>"},"logLevel":"info","replicas":3}`),
		},
		{
			name:     "JSON remove",
			template: configMap(t, "config.json", appJSON),
			field: policyv1alpha1.FieldOverrider{FieldPath: "/data/config.json", JSON: []policyv1alpha1.JSONPatchOperation{
				{SubPath: "/logLevel", Operator: "remove"}}},
			want: configMap(t, "config.json", `{"server":{"port":8080,"banner":"<b>hi</b>"}}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{tt.field}})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}

func TestFieldOverriderRejects(t *testing.T) {
	replaceA := []policyv1alpha1.JSONPatchOperation{{SubPath: "/a", Operator: "replace", Value: raw(`2`)}}
	tests := []struct {
		name     string
		template string
		field    policyv1alpha1.FieldOverrider
		want     string
	}{
		{"neither json nor yaml", configMap(t, "c", `{"a":1}`),
			policyv1alpha1.FieldOverrider{FieldPath: "/data/c"},
			"path /data/c has neither json nor yaml operations; give one"},
		{"both json and yaml", configMap(t, "c", `{"a":1}`),
			policyv1alpha1.FieldOverrider{FieldPath: "/data/c", JSON: replaceA, YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: "/a", Operator: "remove"}}},
			"path /data/c has both json and yaml operations; give one"},
		{"json operations on text that is not JSON", configMap(t, "c", "a: 1\n"),
			policyv1alpha1.FieldOverrider{FieldPath: "/data/c", JSON: replaceA},
			"path /data/c does not hold a JSON document"},
		{"yaml operations on text that is not YAML", configMap(t, "c", "a: [1\n"),
			policyv1alpha1.FieldOverrider{FieldPath: "/data/c", YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: "/a", Operator: "remove"}}},
			"path /data/c does not hold a YAML document"},
		{"a missing field", configMap(t, "c", `{"a":1}`),
			policyv1alpha1.FieldOverrider{FieldPath: "/data/d", JSON: replaceA},
			"path /data/d does not exist"},
		{"a subPath that is not a pointer", configMap(t, "c", `{"a":1}`),
			policyv1alpha1.FieldOverrider{FieldPath: "/data/c", JSON: []policyv1alpha1.JSONPatchOperation{{SubPath: "a", Operator: "remove"}}},
			"path /data/c json[0]: path a is not a JSON pointer: it must start with /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{tt.field}})
			want := "ClusterOverridePolicy test rule 0 fieldOverrider[0]: " + tt.want
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error = %v, want it to start with %q", err, want)
			}
		})
	}
}
