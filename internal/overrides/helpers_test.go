package overrides

import (
	"encoding/json"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// object decodes a JSON fixture the way the API machinery does (whole
// numbers as int64).
func object(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad fixture: %v\n%s", err, js)
	}
	return &unstructured.Unstructured{Object: m}
}

// assertObject fails unless got equals the JSON want exactly.
func assertObject(t *testing.T, got *unstructured.Unstructured, want string) {
	t.Helper()
	w := object(t, want)
	if !reflect.DeepEqual(got.Object, w.Object) {
		t.Errorf("object differs\n got: %s\nwant: %s", pretty(got.Object), pretty(w.Object))
	}
}

func pretty(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// raw is a JSON value for plaintext and field overriders.
func raw(js string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(js)} }

func member(name string, labels map[string]string) *clusterv1alpha1.MemberCluster {
	return &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// onlyOn targets the named members.
func onlyOn(names ...string) *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{ClusterNames: names}
}

func clusterPolicy(name string, spec policyv1alpha1.OverrideSpec) policyv1alpha1.ClusterOverridePolicy {
	return policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func namespacedPolicy(namespace, name string, spec policyv1alpha1.OverrideSpec) policyv1alpha1.OverridePolicy {
	return policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

// rules is a spec of rules that target every member.
func rules(overriders ...policyv1alpha1.Overriders) policyv1alpha1.OverrideSpec {
	var spec policyv1alpha1.OverrideSpec
	for _, o := range overriders {
		spec.OverrideRules = append(spec.OverrideRules, policyv1alpha1.RuleWithCluster{Overriders: o})
	}
	return spec
}

// override applies one set of overriders, through a ClusterOverridePolicy
// that selects everything, to a copy of template for member1.
func override(t *testing.T, template *unstructured.Unstructured, o policyv1alpha1.Overriders) (*unstructured.Unstructured, error) {
	t.Helper()
	res, err := Apply(template, member("member1", nil),
		[]policyv1alpha1.ClusterOverridePolicy{clusterPolicy("test", rules(o))}, nil)
	if err != nil {
		return nil, err
	}
	return res.Object, nil
}

// appliedNames renders a record as strings, e.g. "OverridePolicy ns/p rule 0".
func appliedNames(applied []AppliedRule) []string {
	var out []string
	for _, a := range applied {
		out = append(out, a.String())
	}
	return out
}

// nginxDeployment is the Deployment of the Karmada lab.
const nginxDeployment = `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
  "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                               "env": [{"name": "ROLE", "value": "primary"}]}]}
    }
  }
}`
