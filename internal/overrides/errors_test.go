package overrides

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestErrorsNamePolicyRuleOverriderAndPath(t *testing.T) {
	replaceFoo := policyv1alpha1.PlaintextOverrider{Path: "/spec/foo", Operator: "replace", Value: raw(`1`)}
	okPlaintext := policyv1alpha1.PlaintextOverrider{Path: "/spec/replicas", Operator: "replace", Value: raw(`3`)}
	configMap := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": "default"},
	               "data": {"config.yaml": "server:\n  port: 8080\n", "count": 1}}`

	tests := []struct {
		name     string
		template string
		cluster  []policyv1alpha1.ClusterOverridePolicy
		policies []policyv1alpha1.OverridePolicy
		want     string
		wantErr  Error // Err is not compared
		notFound bool  // errors.Is(err, ErrPathNotFound)
	}{
		{
			name:     "replace of a missing path",
			template: nginxDeployment,
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "p", rules(policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{okPlaintext, replaceFoo}}))},
			want:     "OverridePolicy default/p rule 0 plaintext[1]: path /spec/foo does not exist",
			wantErr:  Error{Policy: PolicyRef{KindOverridePolicy, "default", "p"}, Rule: 0, Overrider: "plaintext", Index: 1, Path: "/spec/foo"},
			notFound: true,
		},
		{
			name:     "remove of a missing array element",
			template: nginxDeployment,
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "p", rules(policyv1alpha1.Overriders{}, policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/template/spec/containers/1", Operator: "remove"}}}))},
			want:     "OverridePolicy default/p rule 1 plaintext[0]: path /spec/template/spec/containers/1 does not exist",
			wantErr:  Error{Policy: PolicyRef{KindOverridePolicy, "default", "p"}, Rule: 1, Overrider: "plaintext", Index: 0, Path: "/spec/template/spec/containers/1"},
			notFound: true,
		},
		{
			name:     "add below a missing parent",
			template: nginxDeployment,
			cluster: []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", rules(policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/strategy/type", Operator: "add", Value: raw(`"Recreate"`)}}}))},
			want:     "ClusterOverridePolicy cop rule 0 plaintext[0]: path /spec/strategy/type cannot be added: its parent /spec/strategy does not exist",
			wantErr:  Error{Policy: PolicyRef{KindClusterOverridePolicy, "", "cop"}, Rule: 0, Overrider: "plaintext", Index: 0, Path: "/spec/strategy/type"},
			notFound: true,
		},
		{
			name:     "add or replace without a value",
			template: nginxDeployment,
			cluster: []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", rules(policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "replace"}}}))},
			want:    "ClusterOverridePolicy cop rule 0 plaintext[0]: path /spec/replicas needs a value for replace",
			wantErr: Error{Policy: PolicyRef{KindClusterOverridePolicy, "", "cop"}, Rule: 0, Overrider: "plaintext", Index: 0, Path: "/spec/replicas"},
		},
		{
			name:     "a path that is not a JSON pointer",
			template: nginxDeployment,
			cluster: []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", rules(policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "spec.replicas", Operator: "remove"}}}))},
			want:    `ClusterOverridePolicy cop rule 0 plaintext[0]: path spec.replicas is not a JSON pointer: it must start with /`,
			wantErr: Error{Policy: PolicyRef{KindClusterOverridePolicy, "", "cop"}, Rule: 0, Overrider: "plaintext", Index: 0, Path: "spec.replicas"},
		},
		{
			name: "an image the overrider cannot parse, in the deprecated form",
			template: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
			            "spec": {"containers": [{"name": "app", "image": "Example/App:1"}]}}`,
			cluster: []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", policyv1alpha1.OverrideSpec{Overriders: policyv1alpha1.Overriders{
				ImageOverrider: []policyv1alpha1.ImageOverrider{{Component: "Registry", Operator: "replace", Value: "mirror.example.com"}}}})},
			want: `ClusterOverridePolicy cop spec.overriders imageOverrider[0]: path /spec/containers/0/image holds image "Example/App:1", which cannot be overridden: ` +
				`invalid repository "Example/App" in image "Example/App:1": lower-case letters, digits and separators only`,
			wantErr: Error{Policy: PolicyRef{KindClusterOverridePolicy, "", "cop"}, Rule: DeprecatedRule, Overrider: "imageOverrider", Index: 0, Path: "/spec/containers/0/image"},
		},
		{
			name:     "a missing image predicate path",
			template: nginxDeployment,
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "p", rules(policyv1alpha1.Overriders{
				ImageOverrider: []policyv1alpha1.ImageOverrider{{Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/initContainers/0/image"},
					Component: "Tag", Operator: "replace", Value: "v2"}}}))},
			want:     "OverridePolicy default/p rule 0 imageOverrider[0]: path /spec/template/spec/initContainers/0/image does not exist",
			wantErr:  Error{Policy: PolicyRef{KindOverridePolicy, "default", "p"}, Rule: 0, Overrider: "imageOverrider", Index: 0, Path: "/spec/template/spec/initContainers/0/image"},
			notFound: true,
		},
		{
			name:     "a missing YAML key inside a field",
			template: configMap,
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "p", rules(policyv1alpha1.Overriders{
				FieldOverrider: []policyv1alpha1.FieldOverrider{{FieldPath: "/data/config.yaml", YAML: []policyv1alpha1.YAMLPatchOperation{
					{SubPath: "/server/port", Operator: "replace", Value: raw(`9090`)},
					{SubPath: "/server/timeout", Operator: "replace", Value: raw(`"5s"`)},
				}}}}))},
			want:     "OverridePolicy default/p rule 0 fieldOverrider[0]: path /data/config.yaml yaml[1]: path /server/timeout does not exist",
			wantErr:  Error{Policy: PolicyRef{KindOverridePolicy, "default", "p"}, Rule: 0, Overrider: "fieldOverrider", Index: 0, Path: "/data/config.yaml"},
			notFound: true,
		},
		{
			name:     "a field that is not a string",
			template: configMap,
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "p", rules(policyv1alpha1.Overriders{
				FieldOverrider: []policyv1alpha1.FieldOverrider{{FieldPath: "/data/count", JSON: []policyv1alpha1.JSONPatchOperation{
					{SubPath: "/a", Operator: "remove"}}}}}))},
			want:    "OverridePolicy default/p rule 0 fieldOverrider[0]: path /data/count is not a string but int64",
			wantErr: Error{Policy: PolicyRef{KindOverridePolicy, "default", "p"}, Rule: 0, Overrider: "fieldOverrider", Index: 0, Path: "/data/count"},
		},
		{
			name:     "an invalid targetCluster",
			template: nginxDeployment,
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "p", policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{
				{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{okPlaintext}}},
				{TargetCluster: &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []policyv1alpha1.FieldSelectorRequirement{
					{Key: "os", Operator: "In", Values: []string{"linux"}}}}}},
			}})},
			want:    `OverridePolicy default/p rule 1 targetCluster: fieldSelector: matchExpressions[0]: unknown key "os", want provider, region or zone`,
			wantErr: Error{Policy: PolicyRef{KindOverridePolicy, "default", "p"}, Rule: 1, Overrider: "targetCluster", Index: -1},
		},
		{
			name:     "an invalid resource selector",
			template: nginxDeployment,
			cluster: []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
				{APIVersion: "v1", Kind: "Service"},
				{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}},
			}})},
			want:    "ClusterOverridePolicy cop resourceSelectors[1]: labelSelector: \"Near\" is not a valid label selector operator",
			wantErr: Error{Policy: PolicyRef{KindClusterOverridePolicy, "", "cop"}, Rule: NoRule, Overrider: "resourceSelectors", Index: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(object(t, tt.template), member("member1", nil), tt.cluster, tt.policies)
			if err == nil {
				t.Fatalf("Apply succeeded with %s, want error %q", pretty(res.Object.Object), tt.want)
			}
			if res != nil {
				t.Errorf("Apply returned a partial result with its error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error", err)
			}
			got := *e
			got.Err = nil
			if got != tt.wantErr {
				t.Errorf("error fields = %+v, want %+v", got, tt.wantErr)
			}
			if errors.Is(err, ErrPathNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrPathNotFound) = %v, want %v", !tt.notFound, tt.notFound)
			}
		})
	}
}
