package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A tenant holds Kubernetes' admin role in one federated namespace of the
// hub, with the tenant roles the release ships aggregated into it by the
// hub's real kube-controller-manager, and tries what a tenant would to reach
// beyond it. Every request below is made as the tenant.
var _ = Describe("A tenant who administers one federated namespace", Ordered, func() {
	const ns, tenant = "tenant-a", "alice"
	var as client.Client

	BeforeAll(func(ctx SpecContext) {
		// The tenant roles come with the release's components, which
		// every backend installs with the manager: not applied here.
		federatedNamespace(ctx, ns)
		Expect(theFleet.Hub.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenant}},
		})).To(Succeed())
		cfg := theFleet.Hub.RESTConfig()
		cfg.Impersonate.UserName = tenant
		var err error
		as, err = client.New(cfg, client.Options{Scheme: theFleet.Hub.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
	})

	It("propagates its own objects, and none of an envelope's ClusterRoleBinding or kube-system DaemonSet reaches a member", func(ctx SpecContext) {
		// The aggregation controller fills admin with the tenant roles shortly after they are applied.
		eventually(ctx, func() error {
			return as.Create(ctx, tenantObject(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: escape, namespace: tenant-a}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: escape}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
`))
		}).WithTimeout(timeUnit).Should(Succeed(), "the tenant writes a PropagationPolicy in its namespace")
		Expect(as.Create(ctx, tenantObject(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: escape
  namespace: tenant-a
  labels: {flotilla.io/envelope: "true"}
data:
  1-crb.yaml: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: alice-is-cluster-admin}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
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
          containers: [{name: shell, image: registry.k8s.io/pause:3.10, securityContext: {privileged: true}}]
  3-own.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings}
    data: {colour: blue}
`))).To(Succeed())

		member := theFleet.Member("member1")
		eventually(ctx, func() error {
			return member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})
		}).WithTimeout(timeUnit).Should(Succeed(), "the envelope's own ConfigMap reaches member1")
		eventually(ctx, func(g Gomega) {
			list := &workv1alpha1.ResourceBindingList{}
			g.Expect(as.List(ctx, list, client.InNamespace(ns))).To(Succeed(), "the tenant reads its bindings")
			g.Expect(list.Items).To(HaveLen(1))
			c := conditions.Get(&list.Items[0], workv1alpha1.ConditionRendered)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(workv1alpha1.BindingReasonForbiddenObject))
			g.Expect(c.Message).To(ContainSubstring("alice-is-cluster-admin"))
			g.Expect(c.Message).To(ContainSubstring("node-shell"))
		}).WithTimeout(timeUnit).Should(Succeed())
		Expect(apierrors.IsNotFound(member.Client.Get(ctx, client.ObjectKey{Name: "alice-is-cluster-admin"}, &rbacv1.ClusterRoleBinding{}))).
			To(BeTrue(), "a ClusterRoleBinding to cluster-admin in member1")
		Expect(apierrors.IsNotFound(member.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "node-shell"}, &appsv1.DaemonSet{}))).
			To(BeTrue(), "a privileged DaemonSet in member1's kube-system")
	}, SpecTimeout(3*time.Minute))

	It("cannot rewrite an object's namespace with an override", func(ctx SpecContext) {
		err := as.Create(ctx, tenantObject(`
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: move, namespace: tenant-a}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: escape}]
  overrideRules:
  - overriders:
      plaintext: [{path: /metadata/namespace, operator: replace, value: kube-system}]
`))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("/metadata/namespace"))
	})

	It("cannot take over a member admin's NetworkPolicy with conflictResolution Overwrite", func(ctx SpecContext) {
		// The member admin's own NetworkPolicy in the tenant's namespace of member1.
		member := theFleet.Member("member1")
		if err := member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(member.Client.Create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default-deny"},
			Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
		})).To(Succeed())

		Expect(as.Create(ctx, tenantObject(`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: tenant-a}
spec:
  podSelector: {}
  ingress: [{}]
`))).To(Succeed(), "the tenant writes a NetworkPolicy that allows everything")
		Expect(as.Create(ctx, tenantObject(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: takeover, namespace: tenant-a}
spec:
  resourceSelectors: [{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, name: default-deny}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
  conflictResolution: Overwrite
`))).To(Succeed())

		eventually(ctx, func(g Gomega) {
			rb := &workv1alpha1.ResourceBinding{}
			g.Expect(as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default-deny-networkpolicy"}, rb)).To(Succeed(), "the tenant reads its binding")
			c := conditions.Get(rb, workv1alpha1.ConditionFullyApplied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("conflictResolution Overwrite of PropagationPolicy tenant-a/takeover is not honoured"))
		}).WithTimeout(timeUnit).Should(Succeed(), "the binding reports the conflict, applied as Abort")
		Consistently(func(g Gomega) {
			np := &networkingv1.NetworkPolicy{}
			g.Expect(member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default-deny"}, np)).To(Succeed())
			g.Expect(np.Spec.Ingress).To(BeEmpty(), "the member admin's NetworkPolicy was rewritten to allow everything")
			g.Expect(np.Labels).NotTo(HaveKey(workv1alpha1.ManagedByLabel), "the member admin's NetworkPolicy was claimed by Flotilla")
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(3*time.Minute))

	It("cannot take a member's traffic with a Service's externalIPs, on the hub, in an envelope or through an override", func(ctx SpecContext) {
		err := as.Create(ctx, tenantObject(`
apiVersion: v1
kind: Service
metadata: {name: grab-direct, namespace: tenant-a}
spec:
  ports: [{port: 80}]
  externalIPs: [203.0.113.10]
`))
		Expect(err).To(HaveOccurred(), "a Service template with externalIPs")
		Expect(err.Error()).To(ContainSubstring("would make the hub's nodes answer for those addresses (members refuse it too"))
		for _, manifest := range []string{`
apiVersion: v1
kind: ConfigMap
metadata:
  name: grab
  namespace: tenant-a
  labels: {flotilla.io/envelope: "true"}
data:
  service.yaml: |
    apiVersion: v1
    kind: Service
    metadata: {name: grab-enveloped}
    spec:
      ports: [{port: 80}]
      externalIPs: [203.0.113.10]
`, `
apiVersion: v1
kind: Service
metadata: {name: grab-overridden, namespace: tenant-a}
spec:
  ports: [{port: 80}]
`, `
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: grab, namespace: tenant-a}
spec:
  resourceSelectors:
  - {apiVersion: v1, kind: ConfigMap, name: grab}
  - {apiVersion: v1, kind: Service, name: grab-overridden}
  placement: {clusterAffinity: {clusterNames: [member1]}}
`, `
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: grab, namespace: tenant-a}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Service, name: grab-overridden}]
  overrideRules:
  - overriders:
      plaintext: [{path: /spec/externalIPs, operator: add, value: [203.0.113.11]}]
`} {
			Expect(as.Create(ctx, tenantObject(manifest))).To(Succeed())
		}
		for binding, service := range map[string]string{"grab-configmap": "grab-enveloped", "grab-overridden-service": "grab-overridden"} {
			eventually(ctx, func(g Gomega) {
				rb := &workv1alpha1.ResourceBinding{}
				g.Expect(as.Get(ctx, client.ObjectKey{Namespace: ns, Name: binding}, rb)).To(Succeed(), "the tenant reads its binding")
				c := conditions.Get(rb, workv1alpha1.ConditionRendered)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(workv1alpha1.BindingReasonForbiddenObject))
				g.Expect(c.Message).To(ContainSubstring("v1 Service tenant-a/" + service + " is not rendered: spec.externalIPs"))
				g.Expect(c.Message).To(ContainSubstring("CVE-2020-8554"))
			}).WithTimeout(timeUnit).Should(Succeed(), "binding "+binding+" says its Service was left out")
		}
		member := theFleet.Member("member1")
		for _, name := range []string{"grab-enveloped", "grab-overridden"} {
			Expect(apierrors.IsNotFound(member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{}))).
				To(BeTrue(), "Service "+name+" with externalIPs in member1")
		}
	}, SpecTimeout(3*time.Minute))

	It("cannot pass its namespace's FederatedResourceQuota by carrying a workload in an envelope", func(ctx SpecContext) {
		// The platform team sets the tenant's fleet-wide quota.
		Expect(theFleet.Hub.Client.Create(ctx, &policyv1alpha1.FederatedResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-a"},
			Spec:       policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(theFleet.Hub.Client.Delete(ctx, &policyv1alpha1.FederatedResourceQuota{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-a"}}))).To(Succeed())
		})

		Expect(as.Create(ctx, tenantObject(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: smuggle, namespace: tenant-a}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: smuggle}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
`))).To(Succeed())
		Expect(as.Create(ctx, tenantObject(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: smuggle
  namespace: tenant-a
  labels: {flotilla.io/envelope: "true"}
data:
  miner.yaml: |
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: miner}
    spec:
      replicas: 4
      selector: {matchLabels: {app: miner}}
      template:
        metadata: {labels: {app: miner}}
        spec:
          containers: [{name: miner, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "1"}}}]
`))).To(Succeed())

		eventually(ctx, func(g Gomega) {
			rb := &workv1alpha1.ResourceBinding{}
			g.Expect(as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "smuggle-configmap"}, rb)).To(Succeed())
			c := conditions.Get(rb, workv1alpha1.ConditionRendered)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(workv1alpha1.BindingReasonQuotaExceeded), c.Message)
			g.Expect(c.Message).To(ContainSubstring("tenant-a"))
		}).WithTimeout(timeUnit).Should(Succeed(), "the envelope's binding refused with QuotaExceeded")
		Expect(apierrors.IsNotFound(theFleet.Member("member1").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "miner"}, &appsv1.Deployment{}))).
			To(BeTrue(), "the envelope's 4-CPU Deployment reached member1 past a 1-CPU quota")
	}, SpecTimeout(3*time.Minute))

	It("cannot write bindings, Works, quota, cluster-scoped policies, member taints or namespaces", func(ctx SpecContext) {
		forbidden := func(what string, err error) {
			GinkgoHelper()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
		}
		forbidden("a ResourceBinding", as.Create(ctx, &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "more"},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: "x"},
				Clusters: []workv1alpha1.TargetCluster{{Name: "member1"}},
			},
		}))
		forbidden("a Work in member1's execution namespace", as.Create(ctx, &workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ExecutionNamespace("member1"), Name: "mine"},
		}))
		forbidden("a FederatedResourceQuota", as.Create(ctx, &policyv1alpha1.FederatedResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlimited"},
			Spec:       policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{}},
		}))
		forbidden("a ClusterPropagationPolicy", as.Create(ctx, tenantObject(`
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everything}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Secret}]
`)))
		mc := &clusterv1alpha1.MemberCluster{}
		Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Name: "member1"}, mc)).To(Succeed())
		mc.Spec.Taints = nil
		forbidden("updating a MemberCluster", as.Update(ctx, mc))
		kubeSystem := &corev1.Namespace{}
		Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, kubeSystem)).To(Succeed())
		kubeSystem.Labels[policyv1alpha1.FederatedLabel] = "true"
		forbidden("labelling kube-system federated", as.Update(ctx, kubeSystem))
	})
})

// tenantObject decodes one YAML object.
func tenantObject(manifest string) client.Object {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	Expect(yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096).Decode(&u.Object)).To(Succeed())
	return u
}
