package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// rejection is one cause the apiserver gives for refusing an object.
type rejection struct {
	field   string
	message string // the cause's message must contain this
}

// TestSchemaRejectsInvalidPolicies applies each invalid object to the real
// apiserver and asserts the exact field and message of the rejection.
func TestSchemaRejectsInvalidPolicies(t *testing.T) {
	ensureNamespace(t, "fleet")
	cases := []struct {
		name string
		yaml string
		want rejection
	}{
		{
			name: "propagation policy without resource selectors",
			yaml: ppWith(`resourceSelectors: []`),
			want: rejection{"spec.resourceSelectors", "should have at least 1 items"},
		},
		{
			name: "spreadByField and spreadByLabel together",
			yaml: ppWith(`placement: {spreadConstraints: [{spreadByField: cluster, spreadByLabel: tier, minGroups: 1}]}`),
			want: rejection{"spec.placement.spreadConstraints[0]", "spreadByField and spreadByLabel are mutually exclusive"},
		},
		{
			name: "maxGroups below minGroups",
			yaml: ppWith(`placement: {spreadConstraints: [{spreadByField: cluster, minGroups: 3, maxGroups: 2}]}`),
			want: rejection{"spec.placement.spreadConstraints[0].maxGroups", "maxGroups must be greater than or equal to minGroups"},
		},
		{
			name: "spread by region without a cluster spread constraint",
			yaml: ppWith(`placement: {spreadConstraints: [{spreadByField: region, minGroups: 2}]}`),
			want: rejection{"spec.placement.spreadConstraints", "a spreadByField constraint on region, zone or provider needs a spreadByField: cluster constraint as well"},
		},
		{
			name: "unknown spread field",
			yaml: ppWith(`placement: {spreadConstraints: [{spreadByField: rack}]}`),
			want: rejection{"spec.placement.spreadConstraints[0].spreadByField", `Unsupported value: "rack"`},
		},
		{
			name: "static weight below 1",
			yaml: ppWith(`placement: {replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {staticWeightList: [{targetCluster: {clusterNames: [m1]}, weight: 0}]}}}`),
			want: rejection{"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight", "should be greater than or equal to 1"},
		},
		{
			name: "static and dynamic weights together",
			yaml: ppWith(`placement: {replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {dynamicWeight: AvailableReplicas, staticWeightList: [{targetCluster: {clusterNames: [m1]}, weight: 1}]}}}`),
			want: rejection{"spec.placement.replicaScheduling.weightPreference", "staticWeightList and dynamicWeight are mutually exclusive"},
		},
		{
			name: "weight preference without Weighted division",
			yaml: ppWith(`placement: {replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated, weightPreference: {dynamicWeight: AvailableReplicas}}}`),
			want: rejection{"spec.placement.replicaScheduling", "weightPreference needs replicaDivisionPreference: Weighted"},
		},
		{
			name: "division preference on Duplicated",
			yaml: ppWith(`placement: {replicaScheduling: {replicaSchedulingType: Duplicated, replicaDivisionPreference: Aggregated}}`),
			want: rejection{"spec.placement.replicaScheduling", "replicaDivisionPreference applies only to replicaSchedulingType Divided"},
		},
		{
			name: "unknown replica scheduling type",
			yaml: ppWith(`placement: {replicaScheduling: {replicaSchedulingType: Spread}}`),
			want: rejection{"spec.placement.replicaScheduling.replicaSchedulingType", `Unsupported value: "Spread"`},
		},
		{
			name: "clusterAffinity and clusterAffinities together",
			yaml: ppWith(`placement: {clusterAffinity: {clusterNames: [m1]}, clusterAffinities: [{affinityName: a, clusterNames: [m2]}]}`),
			want: rejection{"spec.placement", "clusterAffinity and clusterAffinities are mutually exclusive"},
		},
		{
			name: "duplicate affinity names",
			yaml: ppWith(`placement: {clusterAffinities: [{affinityName: a, clusterNames: [m1]}, {affinityName: a, clusterNames: [m2]}]}`),
			want: rejection{"spec.placement.clusterAffinities", "affinityName must be unique within clusterAffinities"},
		},
		{
			name: "field selector on an unknown field",
			yaml: ppWith(`placement: {clusterAffinity: {fieldSelector: {matchExpressions: [{key: color, operator: In, values: [blue]}]}}}`),
			want: rejection{"spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key", `Unsupported value: "color"`},
		},
		{
			name: "unknown conflict resolution",
			yaml: ppWith(`conflictResolution: Merge`),
			want: rejection{"spec.conflictResolution", `Unsupported value: "Merge"`},
		},
		{
			name: "unknown purge mode",
			yaml: ppWith(`failover: {cluster: {purgeMode: Later}}`),
			want: rejection{"spec.failover.cluster.purgeMode", `Unsupported value: "Later"`},
		},
		{
			name: "plaintext overrider with an unknown operator",
			yaml: opWith(`plaintext: [{path: /spec/replicas, operator: update, value: 3}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].operator", `Unsupported value: "update"`},
		},
		{
			name: "plaintext overrider path not a JSON pointer",
			yaml: opWith(`plaintext: [{path: spec.replicas, operator: replace, value: 3}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", `should match '^/'`},
		},
		{
			name: "image overrider with an unknown component",
			yaml: opWith(`imageOverrider: [{component: Digest, operator: replace, value: sha256}]`),
			want: rejection{"spec.overrideRules[0].overriders.imageOverrider[0].component", `Unsupported value: "Digest"`},
		},
		{
			name: "image replace without a value",
			yaml: opWith(`imageOverrider: [{component: Registry, operator: replace}]`),
			want: rejection{"spec.overrideRules[0].overriders.imageOverrider[0].value", "value is required when operator is add or replace"},
		},
		{
			name: "command overrider with replace",
			yaml: opWith(`commandOverrider: [{containerName: web, operator: replace, value: [x]}]`),
			want: rejection{"spec.overrideRules[0].overriders.commandOverrider[0].operator", `Unsupported value: "replace"`},
		},
		{
			name: "labels overrider with an unknown operator",
			yaml: opWith(`labelsOverrider: [{operator: merge, value: {a: b}}]`),
			want: rejection{"spec.overrideRules[0].overriders.labelsOverrider[0].operator", `Unsupported value: "merge"`},
		},
		{
			name: "field overrider with both json and yaml",
			yaml: opWith(`fieldOverrider: [{fieldPath: /data/c, json: [{subPath: /a, operator: remove}], yaml: [{subPath: /a, operator: remove}]}]`),
			want: rejection{"spec.overrideRules[0].overriders.fieldOverrider[0]", "exactly one of json or yaml is required"},
		},
		{
			name: "static assignments exceeding overall",
			yaml: frqWith(`{overall: {cpu: "10", memory: 10Gi}, staticAssignments: [{clusterName: m1, hard: {cpu: "6"}}, {clusterName: m2, hard: {cpu: 4500m, memory: 1Gi}}]}`),
			want: rejection{"spec.staticAssignments", "static assignments of cpu sum to 10500m, more than overall 10"},
		},
		{
			name: "static assignment naming a resource overall does not",
			yaml: frqWith(`{overall: {cpu: "10"}, staticAssignments: [{clusterName: m1, hard: {cpu: "1", pods: "5"}}]}`),
			want: rejection{"spec.staticAssignments[0].hard[pods]", "pods is not in spec.overall"},
		},
		{
			name: "duplicate static assignment",
			yaml: frqWith(`{overall: {cpu: "10"}, staticAssignments: [{clusterName: m1, hard: {cpu: "1"}}, {clusterName: m1, hard: {cpu: "1"}}]}`),
			want: rejection{"spec.staticAssignments", "clusterName must be unique within staticAssignments"},
		},
		{
			name: "negative overall quantity",
			yaml: frqWith(`{overall: {cpu: "-2", memory: 1Gi}}`),
			want: rejection{"spec.overall[cpu]", "must not be negative"},
		},
		{
			name: "unparsable overall quantity",
			yaml: frqWith(`{overall: {cpu: lots}}`),
			want: rejection{"spec.overall.cpu", "should match"},
		},
		{
			name: "negative static assignment quantity",
			yaml: frqWith(`{overall: {cpu: "10"}, staticAssignments: [{clusterName: m1, hard: {cpu: "-1"}}]}`),
			want: rejection{"spec.staticAssignments[0].hard[cpu]", "must not be negative"},
		},
		{
			name: "unparsable static assignment quantity",
			yaml: frqWith(`{overall: {cpu: "10"}, staticAssignments: [{clusterName: m1, hard: {cpu: "a lot"}}]}`),
			want: rejection{"spec.staticAssignments[0].hard.cpu", "should match"},
		},
		{
			name: "empty overall",
			yaml: frqWith(`{overall: {}}`),
			want: rejection{"spec.overall", "should have at least 1 properties"},
		},
		{
			name: "taint policy without conditions",
			yaml: ctpWith(`{taints: [{key: k, effect: NoSchedule}]}`),
			want: rejection{"spec", "at least one of addOnConditions or removeOnConditions is required"},
		},
		{
			name: "taint policy with PreferNoSchedule",
			yaml: ctpWith(`{addOnConditions: [{conditionType: Ready, operator: In, statusValues: ["False"]}], taints: [{key: k, effect: PreferNoSchedule}]}`),
			want: rejection{"spec.taints[0].effect", `Unsupported value: "PreferNoSchedule"`},
		},
		{
			name: "taint policy with an unknown condition status",
			yaml: ctpWith(`{addOnConditions: [{conditionType: Ready, operator: In, statusValues: ["Maybe"]}], taints: [{key: k, effect: NoSchedule}]}`),
			want: rejection{"spec.addOnConditions[0].statusValues[0]", `Unsupported value: "Maybe"`},
		},
		{
			name: "override rewriting a template's namespace",
			yaml: opWith(`plaintext: [{path: /metadata/namespace, operator: replace, value: kube-system}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/metadata/namespace would change the object's identity or ownership"},
		},
		{
			name: "override rewriting a template's name",
			yaml: opWith(`plaintext: [{path: /metadata/name, operator: replace, value: other}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/metadata/name would change the object's identity or ownership"},
		},
		{
			name: "override rewriting a template's kind",
			yaml: opWith(`plaintext: [{path: /kind, operator: replace, value: ClusterRoleBinding}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/kind would change the object's identity or ownership"},
		},
		{
			name: "override rewriting a template's apiVersion",
			yaml: opWith(`plaintext: [{path: /apiVersion, operator: replace, value: rbac.authorization.k8s.io/v1}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/apiVersion would change the object's identity or ownership"},
		},
		{
			name: "override replacing the whole metadata",
			yaml: opWith(`plaintext: [{path: /metadata, operator: replace, value: {name: x, namespace: kube-system}}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/metadata would change the object's identity or ownership"},
		},
		{
			name: "override adding an owner reference",
			yaml: opWith(`plaintext: [{path: /metadata/ownerReferences/0, operator: add, value: {apiVersion: v1, kind: Namespace, name: kube-system, uid: "1"}}]`),
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/metadata/ownerReferences/0 would change the object's identity or ownership"},
		},
		{
			name: "field overrider on a template's name",
			yaml: opWith(`fieldOverrider: [{fieldPath: /metadata/name, yaml: [{subPath: /x, operator: add, value: y}]}]`),
			want: rejection{"spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath", "/metadata/name would change the object's identity or ownership"},
		},
		{
			name: "image overrider aimed at a template's namespace",
			yaml: opWith(`imageOverrider: [{predicate: {path: /metadata/namespace}, component: Registry, operator: replace, value: kube-system}]`),
			want: rejection{"spec.overrideRules[0].overriders.imageOverrider[0].predicate.path", "/metadata/namespace would change the object's identity or ownership"},
		},
		{
			name: "deprecated single-rule overriders rewriting a namespace",
			yaml: `
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: o, namespace: fleet}
spec:
  overriders: {plaintext: [{path: /metadata/namespace, operator: replace, value: kube-system}]}`,
			want: rejection{"spec.overriders.plaintext[0].path", "/metadata/namespace would change the object's identity or ownership"},
		},
		{
			name: "cluster override rewriting a template's namespace",
			yaml: `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: o}
spec:
  overrideRules:
  - overriders: {plaintext: [{path: /metadata/namespace, operator: replace, value: kube-system}]}`,
			want: rejection{"spec.overrideRules[0].overriders.plaintext[0].path", "/metadata/namespace would change the object's identity or ownership"},
		},
		{
			name: "binding whose template is another tenant's",
			yaml: `
apiVersion: work.flotilla.io/v1alpha1
kind: ResourceBinding
metadata: {name: steal, namespace: fleet}
spec: {resource: {apiVersion: v1, kind: Secret, namespace: other-tenant, name: db-credentials}}`,
			want: rejection{"spec.resource.namespace", "must be empty or the binding's own namespace fleet: a ResourceBinding renders only templates of its own namespace"},
		},
		{
			name: "cluster envelope manifest without apiVersion",
			yaml: creWith(`{kind: ClusterRole, metadata: {name: reader}}`),
			want: rejection{"data[role].apiVersion", "Required value"},
		},
		{
			name: "cluster envelope manifest without kind",
			yaml: creWith(`{apiVersion: rbac.authorization.k8s.io/v1, metadata: {name: reader}}`),
			want: rejection{"data[role].kind", "Required value"},
		},
		{
			name: "cluster envelope manifest without name",
			yaml: creWith(`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {labels: {a: b}}}`),
			want: rejection{"data[role]", "metadata.name is required"},
		},
		{
			name: "cluster envelope manifest without metadata",
			yaml: creWith(`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}`),
			want: rejection{"data[role]", "metadata.name is required"},
		},
		{
			name: "cluster envelope manifest with an invalid name",
			yaml: creWith(`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: "Not/A Name"}}`),
			want: rejection{"data[role].metadata.name", "Invalid value"},
		},
		{
			name: "cluster envelope key that is no ConfigMap key",
			yaml: `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterResourceEnvelope
metadata: {name: e}
data:
  "a/b": {apiVersion: v1, kind: Namespace, metadata: {name: guard}}`,
			want: rejection{"data", "keys must consist of alphanumeric characters"},
		},
		{
			name: "member with an unknown sync mode",
			yaml: `
apiVersion: cluster.flotilla.io/v1alpha1
kind: MemberCluster
metadata: {name: bad-mode}
spec: {clusterRef: {namespace: ns, name: c}, syncMode: Sideways}`,
			want: rejection{"spec.syncMode", `Unsupported value: "Sideways"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := createFromYAML(t, tc.yaml)
			assertRejected(t, err, tc.want)
		})
	}
}

// creWith is a ClusterResourceEnvelope carrying manifest under the key role.
func creWith(manifest string) string {
	return `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterResourceEnvelope
metadata: {name: e}
data:
  role: ` + manifest
}

// TestAClusterResourceEnvelopeKeepsWholeManifests: a valid envelope is
// admitted under strict field validation, and its manifests come back whole
// — fields the envelope's schema does not know are kept, namespaced objects
// keep their namespace.
func TestAClusterResourceEnvelopeKeepsWholeManifests(t *testing.T) {
	ctx := context.Background()
	obj := objectFromYAML(t, `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterResourceEnvelope
metadata: {name: whole}
data:
  webhook:
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: guard, labels: {app: guard}}
    webhooks:
    - name: guard.example.com
      admissionReviewVersions: [v1]
      sideEffects: None
      clientConfig: {service: {name: guard, namespace: guard-system, port: 8443}}
  service:
    apiVersion: v1
    kind: Service
    metadata: {name: guard, namespace: guard-system}
    spec: {ports: [{port: 8443}]}`)
	if err := env.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("create: %v", err)
	}
	defer func() { _ = env.Client.Delete(ctx, obj) }()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	webhooks, _, _ := unstructured.NestedSlice(got.Object, "data", "webhook", "webhooks")
	if len(webhooks) != 1 {
		t.Fatalf("webhooks = %v, want the one written", webhooks)
	}
	if ns, _, _ := unstructured.NestedString(webhooks[0].(map[string]any), "clientConfig", "service", "namespace"); ns != "guard-system" {
		t.Errorf("webhook clientConfig.service.namespace = %q, want guard-system", ns)
	}
	if ns, _, _ := unstructured.NestedString(got.Object, "data", "service", "metadata", "namespace"); ns != "guard-system" {
		t.Errorf("Service metadata.namespace = %q, want guard-system", ns)
	}
	if app, _, _ := unstructured.NestedString(got.Object, "data", "webhook", "metadata", "labels", "app"); app != "guard" {
		t.Errorf("webhook label app = %q, want guard", app)
	}
}

// TestTheClusterEnvelopeExampleIsAdmitted: examples/cluster-envelope.yaml
// applies with strict field validation.
func TestTheClusterEnvelopeExampleIsAdmitted(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "cluster-envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		obj := objectFromYAML(t, doc)
		if err := env.Client.Create(context.Background(), obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Errorf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
			continue
		}
		_ = env.Client.Delete(context.Background(), obj)
	}
}

// TestABindingMayNameItsOwnNamespaceOrNone: the template reference rule
// admits the bindings the detector writes, and refuses moving one to
// another namespace by an update.
func TestABindingMayNameItsOwnNamespaceOrNone(t *testing.T) {
	ensureNamespace(t, "fleet")
	ctx := context.Background()
	for _, ns := range []string{"fleet", ""} {
		obj := objectFromYAML(t, `
apiVersion: work.flotilla.io/v1alpha1
kind: ResourceBinding
metadata: {name: own, namespace: fleet}
spec: {resource: {apiVersion: v1, kind: ConfigMap, name: settings}}`)
		if ns != "" {
			_ = unstructured.SetNestedField(obj.Object, ns, "spec", "resource", "namespace")
		}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("template namespace %q: %v", ns, err)
		}
		_ = unstructured.SetNestedField(obj.Object, "kube-system", "spec", "resource", "namespace")
		assertRejected(t, env.Client.Update(ctx, obj), rejection{"spec.resource.namespace", "must be empty or the binding's own namespace fleet"})
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemberClusterRefIsImmutable checks that a member cannot be re-pointed
// at another CAPI Cluster.
func TestMemberClusterRefIsImmutable(t *testing.T) {
	obj := objectFromYAML(t, `
apiVersion: cluster.flotilla.io/v1alpha1
kind: MemberCluster
metadata: {name: immutable-ref}
spec: {clusterRef: {namespace: ns, name: c}}`)
	ctx := context.Background()
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	if got, _, _ := unstructured.NestedString(obj.Object, "spec", "syncMode"); got != "Push" {
		t.Errorf("syncMode default: want Push, got %q", got)
	}
	_ = unstructured.SetNestedField(obj.Object, "other", "spec", "clusterRef", "name")
	assertRejected(t, env.Client.Update(ctx, obj), rejection{"spec.clusterRef", "clusterRef is immutable"})
}

func ppWith(specYAML string) string {
	return `
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: fleet}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  ` + specYAML
}

func opWith(overridersYAML string) string {
	return `
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: o, namespace: fleet}
spec:
  overrideRules:
  - targetCluster: {clusterNames: [m1]}
    overriders: {` + overridersYAML + `}`
}

func frqWith(specYAML string) string {
	return `
apiVersion: policy.flotilla.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: q, namespace: fleet}
spec: ` + specYAML
}

func ctpWith(specYAML string) string {
	return `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: t}
spec: ` + specYAML
}

func objectFromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("test YAML: %v", err)
	}
	return u
}

func createFromYAML(t *testing.T, doc string) error {
	t.Helper()
	obj := objectFromYAML(t, doc)
	err := env.Client.Create(context.Background(), obj, client.FieldValidation(metav1.FieldValidationStrict))
	if err == nil {
		_ = env.Client.Delete(context.Background(), obj)
	}
	return err
}

func assertRejected(t *testing.T, err error, want rejection) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want rejection at %s: %q", want.field, want.message)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		t.Fatalf("error has no details: %v", err)
	}
	var seen []string
	for _, c := range status.Status().Details.Causes {
		if c.Field == want.field && strings.Contains(c.Message, want.message) {
			return
		}
		seen = append(seen, c.Field+": "+c.Message)
	}
	t.Errorf("want a cause at %s containing %q; got:\n  %s", want.field, want.message, strings.Join(seen, "\n  "))
}
