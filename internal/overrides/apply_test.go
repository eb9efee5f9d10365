package overrides

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// The Karmada lab: the env value becomes "secondary" on member2 only.
func TestEnvValueReplaceAppliesToMember2Only(t *testing.T) {
	policy := namespacedPolicy("default", "nginx-env", policyv1alpha1.OverrideSpec{
		ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}},
		OverrideRules: []policyv1alpha1.RuleWithCluster{{
			TargetCluster: onlyOn("member2"),
			Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
				Path: "/spec/template/spec/containers/0/env/0/value", Operator: "replace", Value: raw(`"secondary"`),
			}}},
		}},
	})
	tests := []struct {
		member      string
		wantObject  string
		wantApplied []string
	}{
		{"member1", nginxDeployment, nil},
		{"member2", `{
		  "apiVersion": "apps/v1", "kind": "Deployment",
		  "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
		  "spec": {
		    "replicas": 2,
		    "selector": {"matchLabels": {"app": "nginx"}},
		    "template": {
		      "metadata": {"labels": {"app": "nginx"}},
		      "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
		                               "env": [{"name": "ROLE", "value": "secondary"}]}]}
		    }
		  }
		}`, []string{"OverridePolicy default/nginx-env rule 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			res, err := Apply(object(t, nginxDeployment), member(tt.member, nil), nil,
				[]policyv1alpha1.OverridePolicy{policy})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, res.Object, tt.wantObject)
			if got := appliedNames(res.Applied); !reflect.DeepEqual(got, tt.wantApplied) {
				t.Errorf("applied = %q, want %q", got, tt.wantApplied)
			}
		})
	}
}

func TestAppliedRecordCopiesTheOverriders(t *testing.T) {
	o := policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"tier": "web"}}}}
	policies := []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", rules(o))}
	res, err := Apply(object(t, nginxDeployment), member("member1", nil), policies, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []AppliedRule{{Policy: PolicyRef{Kind: KindClusterOverridePolicy, Name: "cop"}, Rule: 0, Overriders: o}}
	if !reflect.DeepEqual(res.Applied, want) {
		t.Fatalf("applied = %+v, want %+v", res.Applied, want)
	}
	policies[0].Spec.OverrideRules[0].Overriders.LabelsOverrider[0].Value["tier"] = "changed"
	if res.Applied[0].Overriders.LabelsOverrider[0].Value["tier"] != "web" {
		t.Error("the record shares memory with the policy")
	}
}

// appendArg is an overrider whose effect shows the order of application:
// each one appends its name to the nginx container's args.
func appendArg(name string) policyv1alpha1.Overriders {
	return policyv1alpha1.Overriders{ArgsOverrider: []policyv1alpha1.CommandArgsOverrider{
		{ContainerName: "nginx", Operator: "add", Value: []string{name}},
	}}
}

func argsOf(t *testing.T, obj map[string]any) []any {
	t.Helper()
	containers := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	args, _ := containers[0].(map[string]any)["args"].([]any)
	return args
}

func TestPrecedence(t *testing.T) {
	byName := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}}
	byLabel := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}}}
	byKind := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}}
	withSelectors := func(spec policyv1alpha1.OverrideSpec, rs []policyv1alpha1.ResourceSelector) policyv1alpha1.OverrideSpec {
		spec.ResourceSelectors = rs
		return spec
	}

	tests := []struct {
		name     string
		cluster  []policyv1alpha1.ClusterOverridePolicy
		policies []policyv1alpha1.OverridePolicy
		wantArgs []any
		wantLog  []string
	}{
		{
			name:     "ClusterOverridePolicy applies before OverridePolicy, whatever the names",
			cluster:  []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("z-cluster", rules(appendArg("cluster")))},
			policies: []policyv1alpha1.OverridePolicy{namespacedPolicy("default", "a-namespaced", rules(appendArg("namespaced")))},
			wantArgs: []any{"cluster", "namespaced"},
			wantLog:  []string{"ClusterOverridePolicy z-cluster rule 0", "OverridePolicy default/a-namespaced rule 0"},
		},
		{
			name: "within a kind, select-all before labelSelector before name, whatever the names",
			policies: []policyv1alpha1.OverridePolicy{
				namespacedPolicy("default", "a-by-name", withSelectors(rules(appendArg("name")), byName)),
				namespacedPolicy("default", "b-by-label", withSelectors(rules(appendArg("label")), byLabel)),
				namespacedPolicy("default", "c-by-kind", withSelectors(rules(appendArg("kind")), byKind)),
				namespacedPolicy("default", "d-no-selectors", rules(appendArg("all"))),
			},
			wantArgs: []any{"kind", "all", "label", "name"},
			wantLog: []string{"OverridePolicy default/c-by-kind rule 0", "OverridePolicy default/d-no-selectors rule 0",
				"OverridePolicy default/b-by-label rule 0", "OverridePolicy default/a-by-name rule 0"},
		},
		{
			name: "a policy ranks by its most specific matching selector",
			cluster: []policyv1alpha1.ClusterOverridePolicy{
				clusterPolicy("a-kind-or-name", withSelectors(rules(appendArg("kind-or-name")), append(append([]policyv1alpha1.ResourceSelector{}, byKind...), byName...))),
				clusterPolicy("b-label", withSelectors(rules(appendArg("label")), byLabel)),
			},
			wantArgs: []any{"label", "kind-or-name"},
			wantLog:  []string{"ClusterOverridePolicy b-label rule 0", "ClusterOverridePolicy a-kind-or-name rule 0"},
		},
		{
			name: "equal priority applies in name order",
			cluster: []policyv1alpha1.ClusterOverridePolicy{
				clusterPolicy("zeta", rules(appendArg("zeta"))),
				clusterPolicy("alpha", rules(appendArg("alpha"))),
			},
			wantArgs: []any{"alpha", "zeta"},
			wantLog:  []string{"ClusterOverridePolicy alpha rule 0", "ClusterOverridePolicy zeta rule 0"},
		},
		{
			name: "within a policy, the deprecated pair, then the rules in order",
			cluster: []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", policyv1alpha1.OverrideSpec{
				Overriders: appendArg("deprecated"),
				OverrideRules: []policyv1alpha1.RuleWithCluster{
					{Overriders: appendArg("rule0")},
					{TargetCluster: onlyOn("member2"), Overriders: appendArg("rule1-member2")},
					{Overriders: appendArg("rule2")},
				},
			})},
			wantArgs: []any{"deprecated", "rule0", "rule2"},
			wantLog:  []string{"ClusterOverridePolicy cop spec.overriders", "ClusterOverridePolicy cop rule 0", "ClusterOverridePolicy cop rule 2"},
		},
		{
			name:     "a deprecated pair whose targetCluster excludes the member does not apply",
			cluster:  []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", policyv1alpha1.OverrideSpec{TargetCluster: onlyOn("member2"), Overriders: appendArg("deprecated")})},
			wantArgs: nil,
			wantLog:  nil,
		},
		{
			name: "OverridePolicies of other namespaces are skipped",
			policies: []policyv1alpha1.OverridePolicy{
				namespacedPolicy("other", "op", rules(appendArg("other"))),
				namespacedPolicy("default", "op", rules(appendArg("default"))),
			},
			wantArgs: []any{"default"},
			wantLog:  []string{"OverridePolicy default/op rule 0"},
		},
		{
			name: "an OverridePolicy ignores its selectors' namespace; a ClusterOverridePolicy honours it",
			cluster: []policyv1alpha1.ClusterOverridePolicy{
				clusterPolicy("cop-other-ns", withSelectors(rules(appendArg("cop-other")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other"}})),
				clusterPolicy("cop-default-ns", withSelectors(rules(appendArg("cop-default")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default"}})),
			},
			policies: []policyv1alpha1.OverridePolicy{
				namespacedPolicy("default", "op", withSelectors(rules(appendArg("op")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other"}})),
			},
			wantArgs: []any{"cop-default", "op"},
			wantLog:  []string{"ClusterOverridePolicy cop-default-ns rule 0", "OverridePolicy default/op rule 0"},
		},
		{
			name: "selectors of another kind, apiVersion, name or labels do not select",
			cluster: []policyv1alpha1.ClusterOverridePolicy{
				clusterPolicy("kind", withSelectors(rules(appendArg("kind")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "StatefulSet"}})),
				clusterPolicy("version", withSelectors(rules(appendArg("version")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1beta1", Kind: "Deployment"}})),
				clusterPolicy("name", withSelectors(rules(appendArg("name")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "redis"}})),
				clusterPolicy("labels", withSelectors(rules(appendArg("labels")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "redis"}}}})),
			},
			wantArgs: nil,
			wantLog:  nil,
		},
		{
			name: "a name selector ignores a labelSelector beside it, as in Karmada",
			cluster: []policyv1alpha1.ClusterOverridePolicy{
				clusterPolicy("cop", withSelectors(rules(appendArg("name")), []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "redis"}}}})),
			},
			wantArgs: []any{"name"},
			wantLog:  []string{"ClusterOverridePolicy cop rule 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(object(t, nginxDeployment), member("member1", nil), tt.cluster, tt.policies)
			if err != nil {
				t.Fatal(err)
			}
			if got := argsOf(t, res.Object.Object); !reflect.DeepEqual(got, tt.wantArgs) {
				t.Errorf("args = %q, want %q", got, tt.wantArgs)
			}
			if got := appliedNames(res.Applied); !reflect.DeepEqual(got, tt.wantLog) {
				t.Errorf("applied = %q, want %q", got, tt.wantLog)
			}
		})
	}
}

func TestPrecedenceDoesNotDependOnInputOrder(t *testing.T) {
	a := clusterPolicy("alpha", rules(appendArg("alpha")))
	b := clusterPolicy("beta", rules(appendArg("beta")))
	for _, order := range [][]policyv1alpha1.ClusterOverridePolicy{{a, b}, {b, a}} {
		res, err := Apply(object(t, nginxDeployment), member("member1", nil), order, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := argsOf(t, res.Object.Object); !reflect.DeepEqual(got, []any{"alpha", "beta"}) {
			t.Errorf("args = %q, want [alpha beta]", got)
		}
	}
}

func TestPolicyScope(t *testing.T) {
	namespace := `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}`
	label := func(key string) policyv1alpha1.Overriders {
		return policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{key: "yes"}}}}
	}
	res, err := Apply(object(t, namespace), member("member1", nil),
		[]policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", rules(label("cluster")))},
		[]policyv1alpha1.OverridePolicy{namespacedPolicy("default", "op", rules(label("namespaced")))})
	if err != nil {
		t.Fatal(err)
	}
	// A cluster-scoped template takes ClusterOverridePolicies only.
	assertObject(t, res.Object, `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {"cluster": "yes"}}}`)
}

// Within one rule Karmada applies plaintext last, after image, command,
// args, labels, annotations and field overriders.
func TestOverriderOrderWithinARule(t *testing.T) {
	t.Run("plaintext wins over imageOverrider and labelsOverrider", func(t *testing.T) {
		got, err := override(t, object(t, nginxDeployment), policyv1alpha1.Overriders{
			Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/spec/template/spec/containers/0/image", Operator: "replace", Value: raw(`"busybox:1.36"`)},
				{Path: "/metadata/labels/app", Operator: "replace", Value: raw(`"from-plaintext"`)},
			},
			ImageOverrider:  []policyv1alpha1.ImageOverrider{{Component: "Tag", Operator: "replace", Value: "1.26"}},
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "replace", Value: map[string]string{"app": "from-labels"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		assertObject(t, got, `{
		  "apiVersion": "apps/v1", "kind": "Deployment",
		  "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "from-plaintext"}},
		  "spec": {
		    "replicas": 2,
		    "selector": {"matchLabels": {"app": "nginx"}},
		    "template": {
		      "metadata": {"labels": {"app": "nginx"}},
		      "spec": {"containers": [{"name": "nginx", "image": "busybox:1.36",
		                               "env": [{"name": "ROLE", "value": "primary"}]}]}
		    }
		  }
		}`)
	})
	t.Run("fieldOverrider runs before plaintext adds the field it patches", func(t *testing.T) {
		_, err := override(t, object(t, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}`), policyv1alpha1.Overriders{
			Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/data/config.yaml", Operator: "add", Value: raw(`"a: 1\n"`)}},
			FieldOverrider: []policyv1alpha1.FieldOverrider{{FieldPath: "/data/config.yaml",
				YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: "/a", Operator: "replace", Value: raw(`2`)}}}},
		})
		want := "ClusterOverridePolicy test rule 0 fieldOverrider[0]: path /data/config.yaml does not exist"
		if err == nil || err.Error() != want {
			t.Fatalf("error = %v, want %q", err, want)
		}
	})
	t.Run("image overriders apply in list order", func(t *testing.T) {
		got, err := override(t, object(t, nginxDeployment), policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
			{Component: "Tag", Operator: "replace", Value: "1.26"},
			{Component: "Tag", Operator: "add", Value: "-alpine"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		containers := got.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
		if image := containers[0].(map[string]any)["image"]; image != "nginx:1.26-alpine" {
			t.Errorf("image = %v, want nginx:1.26-alpine", image)
		}
	})
}

func TestRuleTargetingByMemberLabels(t *testing.T) {
	policy := clusterPolicy("prod-replicas", policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
		TargetCluster: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		Overriders:    policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "replace", Value: raw(`5`)}}},
	}}})
	tests := []struct {
		member       string
		labels       map[string]string
		wantReplicas int64
	}{
		{"prod-1", map[string]string{"env": "prod"}, 5},
		{"dev-1", map[string]string{"env": "dev"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			res, err := Apply(object(t, nginxDeployment), member(tt.member, tt.labels), []policyv1alpha1.ClusterOverridePolicy{policy}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Object.Object["spec"].(map[string]any)["replicas"]; got != tt.wantReplicas {
				t.Errorf("replicas = %#v, want %d", got, tt.wantReplicas)
			}
		})
	}
}

func TestApplyNeedsTemplateAndMember(t *testing.T) {
	if _, err := Apply(nil, member("m", nil), nil, nil); err == nil {
		t.Error("Apply(nil template) = nil error")
	}
	if _, err := Apply(object(t, nginxDeployment), nil, nil, nil); err == nil {
		t.Error("Apply(nil member) = nil error")
	}
}
