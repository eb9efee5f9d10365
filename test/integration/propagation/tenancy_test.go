package propagation_test

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The tenancy rule: a namespaced binding renders only namespaced objects of
// its own namespace (internal/tenancy). Each test is an attack a tenant who
// administers one federated namespace would try.

// TestAnEnvelopeCannotReachBeyondItsNamespace: an envelope of a tenant's
// namespace carrying a ClusterRoleBinding to cluster-admin, a DaemonSet in
// kube-system, a CRD, a webhook configuration and a kind the hub does not
// serve gets none of them into the member; its ConfigMap and Secret are
// applied; the binding and the template say what was refused and why.
func TestAnEnvelopeCannotReachBeyondItsNamespace(t *testing.T) {
	const ns = "tenant-envelope"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: escape
  namespace: tenant-envelope
  labels: {flotilla.io/envelope: "true"}
data:
  1-crb.yaml: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: tenant-is-cluster-admin}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant}]
  2-daemonset.yaml: |
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: node-shell, namespace: kube-system}
    spec:
      selector: {matchLabels: {app: node-shell}}
      template:
        metadata: {labels: {app: node-shell}}
        spec:
          hostPID: true
          containers:
          - name: shell
            image: registry.k8s.io/pause:3.10
            securityContext: {privileged: true}
  3-crd.yaml: |
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gadgets.tenant.example.com}
    spec:
      group: tenant.example.com
      scope: Namespaced
      names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
      versions:
      - name: v1
        served: true
        storage: true
        schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  4-webhook.yaml: |
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: tenant-intercepts-everything}
    webhooks:
    - name: check.example.invalid
      admissionReviewVersions: [v1]
      sideEffects: None
      failurePolicy: Ignore
      clientConfig: {url: "https://check.example.invalid/validate"}
      rules:
      - {apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}
  5-unknown.yaml: |
    apiVersion: tenant.example.com/v1
    kind: Gadget
    metadata: {name: g1, namespace: tenant-envelope}
  6-other-tenant.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: planted, namespace: other-tenant}
  7-allowed.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings}
    data: {mode: fleet}
    ---
    apiVersion: v1
    kind: Secret
    metadata: {name: creds, namespace: tenant-envelope}
    stringData: {token: t}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: escape, namespace: tenant-envelope}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: escape}]
`)
	rb := bindAndSchedule(t, ns, "escape", "ConfigMap", placement(member1, 0))

	refused := []string{
		"rbac.authorization.k8s.io/v1 ClusterRoleBinding tenant-is-cluster-admin is not rendered: a ResourceBinding renders only namespaced objects",
		"apps/v1 DaemonSet kube-system/node-shell is not rendered: a ResourceBinding renders only into its own namespace tenant-envelope",
		"apiextensions.k8s.io/v1 CustomResourceDefinition gadgets.tenant.example.com is not rendered: a ResourceBinding renders only namespaced objects",
		"admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration tenant-intercepts-everything is not rendered: a ResourceBinding renders only namespaced objects",
		"tenant.example.com/v1 Gadget tenant-envelope/g1 is not rendered: the hub does not serve this kind, so its scope is unknown",
		"v1 ConfigMap other-tenant/planted is not rendered: a ResourceBinding renders only into its own namespace tenant-envelope",
	}
	eventually(t, "Rendered=False ForbiddenObject naming every refused object", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		for _, m := range refused {
			if err := hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonForbiddenObject, "member member1: "+m); err != nil {
				return err
			}
		}
		return nil
	})
	eventually(t, "a ForbiddenObject event on the template", func() error {
		return eventOn(ns, "escape", workv1alpha1.BindingReasonForbiddenObject, refused[0])
	})

	// The binding's other objects are applied.
	eventually(t, "the envelope's ConfigMap and Secret in member1", func() error {
		if err := inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}); err != nil {
			return err
		}
		return inMember(member1, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}})
	})
	w, err := work(rb, member1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.Spec.Workload.Manifests); n != 2 {
		t.Errorf("the Work carries %d manifests, want the ConfigMap and the Secret only", n)
	}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-is-cluster-admin"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-shell"}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.tenant.example.com"}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "tenant-intercepts-everything"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other-tenant", Name: "planted"}},
	} {
		if err := goneFromMember(member1, obj); err != nil {
			t.Errorf("refused object reached the member: %v", err)
		}
	}
}

// TestAFieldOverrideCannotMoveAnEnvelopesContents: a fieldOverrider that
// rewrites the namespace of a manifest embedded in an envelope (a path the
// admission of OverridePolicies cannot see, since it is inside a string)
// is caught where the Work is rendered; the other member is unaffected.
func TestAFieldOverrideCannotMoveAnEnvelopesContents(t *testing.T) {
	const ns = "tenant-field"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: bundle
  namespace: tenant-field
  labels: {flotilla.io/envelope: "true"}
data:
  role.yaml: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: reader, namespace: tenant-field}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: bundle, namespace: tenant-field}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: bundle}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: into-kube-system, namespace: tenant-field}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: bundle}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      fieldOverrider:
      - fieldPath: /data/role.yaml
        yaml: [{subPath: /metadata/namespace, operator: replace, value: kube-system}]
`)
	rb := bindAndSchedule(t, ns, "bundle", "ConfigMap", placement(member1, 0, member2, 0))
	eventually(t, "Rendered=False ForbiddenObject for member2", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonForbiddenObject,
			"member member2: rbac.authorization.k8s.io/v1 RoleBinding kube-system/reader is not rendered: a ResourceBinding renders only into its own namespace tenant-field")
	})
	if c := rb.Status.Conditions; strings.Contains(fmt.Sprint(c), "member member1") {
		t.Errorf("member1 is named in the conditions: %v", c)
	}
	eventually(t, "the RoleBinding in member1's tenant namespace", func() error {
		return inMember(member1, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})
	})
	consistently(t, settle, "no RoleBinding in member2's kube-system", func() error {
		return goneFromMember(member2, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "reader"}})
	})
}

// TestAnOverrideCannotChangeATemplatesIdentity: OverridePolicies whose
// plaintext overriders would rewrite a template's apiVersion, kind, name or
// namespace are refused at admission with the field path, and the template
// reaches the member as it is. (Should such a policy exist anyway — stored
// before the webhook, or written around it — the binding controller leaves
// the rewritten object out: controllers/binding TestRenderLeavesOutWhatTheTenancyRuleForbids.)
func TestAnOverrideCannotChangeATemplatesIdentity(t *testing.T) {
	const ns = "tenant-identity"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: tenant-identity}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: tenant-identity}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
`)
	for _, tt := range []struct{ path, value string }{
		{"/metadata/namespace", `"kube-system"`},
		{"/metadata/name", `"someone-elses"`},
		{"/kind", `"Secret"`},
		{"/apiVersion", `"rbac.authorization.k8s.io/v1"`},
		{"/metadata", `{"name": "plain", "namespace": "kube-system"}`},
	} {
		t.Run(tt.path, func(t *testing.T) {
			op := decode(t, fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: rewrite, namespace: tenant-identity}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: plain}]
  overrideRules:
  - overriders:
      plaintext: [{path: %q, operator: replace, value: %s}]
`, tt.path, tt.value))
			err := hub.Client.Create(ctx(), op)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want Invalid", err)
			}
			want := `spec.overrideRules[0].overriders.plaintext[0].path: Forbidden: ` + tt.path + ` would change the object's identity or ownership`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("denial %q, want it to contain %q", err, want)
			}
		})
	}
	rb := bindAndSchedule(t, ns, "plain", "ConfigMap", placement(member1, 0))
	eventually(t, "the ConfigMap in member1 as it is, Rendered=True", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}
		if err := inMember(member1, cm); err != nil {
			return err
		}
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered, "")
	})
	if err := goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plain"}}); err != nil {
		t.Error(err)
	}
}

// TestAServiceWithExternalIPsReachesNoMemberUnlessAClusterAdminAllowsIt:
// the hub refuses a Service template with spec.externalIPs in a federated
// namespace (the inert-namespace webhook), so a tenant tries the two other
// roads to CVE-2020-8554: the same Service inside an envelope, and a plain
// Service given externalIPs by an OverridePolicy. Neither reaches the
// member; the binding says which Service and why. Once a cluster admin
// labels the namespace policy.flotilla.io/allow-external-ips=true, both do.
func TestAServiceWithExternalIPsReachesNoMemberUnlessAClusterAdminAllowsIt(t *testing.T) {
	const ns = "tenant-external-ips"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: grab
  namespace: tenant-external-ips
  labels: {flotilla.io/envelope: "true"}
data:
  service.yaml: |
    apiVersion: v1
    kind: Service
    metadata: {name: enveloped}
    spec:
      selector: {app: grab}
      ports: [{port: 80}]
      externalIPs: [203.0.113.10]
  settings.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings}
    data: {mode: fleet}
---
apiVersion: v1
kind: Service
metadata: {name: overridden, namespace: tenant-external-ips}
spec:
  selector: {app: grab}
  ports: [{port: 80}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: grab, namespace: tenant-external-ips}
spec:
  resourceSelectors:
  - {apiVersion: v1, kind: ConfigMap, name: grab}
  - {apiVersion: v1, kind: Service, name: overridden}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: add-external-ips, namespace: tenant-external-ips}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Service, name: overridden}]
  overrideRules:
  - overriders:
      plaintext: [{path: /spec/externalIPs, operator: add, value: [203.0.113.11]}]
`)
	envelope := bindAndSchedule(t, ns, "grab", "ConfigMap", placement(member1, 0))
	service := bindAndSchedule(t, ns, "overridden", "Service", placement(member1, 0))
	for _, c := range []struct {
		rb      *workv1alpha1.ResourceBinding
		message string
	}{
		{envelope, "member member1: v1 Service tenant-external-ips/enveloped is not rendered: spec.externalIPs (203.0.113.10) would make every node of the member answer for those addresses and take their traffic (CVE-2020-8554); a cluster admin allows it by labelling the hub namespace tenant-external-ips policy.flotilla.io/allow-external-ips=true"},
		{service, "member member1: v1 Service tenant-external-ips/overridden is not rendered: spec.externalIPs (203.0.113.11) would make every node of the member answer"},
	} {
		eventually(t, "Rendered=False ForbiddenObject on "+c.rb.Name, func() error {
			if err := hub.Client.Get(ctx(), keyOf(c.rb), c.rb); err != nil {
				return err
			}
			return hasCondition(c.rb, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonForbiddenObject, c.message)
		})
	}
	eventually(t, "the envelope's ConfigMap in member1", func() error {
		return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
	})
	consistently(t, settle, "neither Service in member1", func() error {
		for _, name := range []string{"enveloped", "overridden"} {
			if err := goneFromMember(member1, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
				return err
			}
		}
		return nil
	})

	// A cluster admin's mark lets both through, with their addresses.
	hubNS := &corev1.Namespace{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: ns}, hubNS); err != nil {
		t.Fatal(err)
	}
	before := hubNS.DeepCopy()
	hubNS.Labels["policy.flotilla.io/allow-external-ips"] = "true"
	if err := hub.Client.Patch(ctx(), hubNS, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	for name, ip := range map[string]string{"enveloped": "203.0.113.10", "overridden": "203.0.113.11"} {
		eventually(t, "Service "+name+" in member1 with its externalIPs", func() error {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if err := inMember(member1, svc); err != nil {
				return err
			}
			if fmt.Sprint(svc.Spec.ExternalIPs) != "["+ip+"]" {
				return fmt.Errorf("externalIPs %v, want [%s]", svc.Spec.ExternalIPs, ip)
			}
			return nil
		})
	}
}
