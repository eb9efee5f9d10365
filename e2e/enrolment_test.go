package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

var _ = Describe("Enrolment", func() {
	It("enrols each labelled CAPI Cluster as a Ready member, with the estimator installed by a ClusterResourceSet", func(ctx SpecContext) {
		var latencies []time.Duration
		for _, m := range theFleet.Members()[:3] {
			mc := readyMember(ctx, m)
			Expect(mc.Spec.Region).NotTo(BeEmpty())
			Expect(mc.Spec.Provider).To(Equal(m.Spec.Labels["flotilla.io/provider"]))
			Expect(mc.Spec.Zone).To(Equal(m.Spec.Labels["topology.kubernetes.io/zone"]))
			Expect(mc.Status.KubernetesVersion).To(Equal(fleet.KubernetesVersion))

			// Installed by CAPI's own ClusterResourceSet controller.
			eventually(ctx, func(g Gomega) {
				binding := &addonsv1.ClusterResourceSetBinding{}
				g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: m.Spec.Namespace, Name: m.Spec.Name}, binding)).To(Succeed())
				g.Expect(binding.Spec.Bindings).NotTo(BeEmpty())
				estimator := &appsv1.Deployment{}
				g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: "flotilla-estimator"}, estimator)).To(Succeed())
				mc, _ := memberOf(ctx, m)
				g.Expect(mc.Status.CapacityModel).NotTo(BeNil(), "capacity model of %s", mc.Name)
				g.Expect(mc.Status.NodeSummary).NotTo(BeNil())
				g.Expect(mc.Status.NodeSummary.ReadyNum).To(BeEquivalentTo(len(m.NodeNames())))
			}).WithTimeout(2 * timeUnit).Should(Succeed())

			cluster, err := theFleet.Cluster(ctx, m)
			Expect(err).NotTo(HaveOccurred())
			initialized := conditions.Get(cluster, capiv1.ClusterControlPlaneInitializedCondition)
			ready := conditions.Get(mc, clusterv1alpha1.ConditionEnrolled)
			if initialized != nil && ready != nil {
				latencies = append(latencies, ready.LastTransitionTime.Sub(initialized.LastTransitionTime.Time))
			}
		}
		AddReportEntry("enrolment latency (ControlPlaneInitialized → Enrolled; condition timestamps have 1 s resolution, so 0s means under a second)", latencies)
	}, SpecTimeout(5*time.Minute))

	It("writes into members as its own scoped identity, which cannot grant itself more", func(ctx SpecContext) {
		m := theFleet.Member("member1")
		mc := readyMember(ctx, m)
		secret := &corev1.Secret{}
		Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: clusterv1alpha1.HubIdentitySecretName(mc.Name)}, secret)).To(Succeed())
		var kubeconfig []byte
		for _, v := range secret.Data {
			kubeconfig = v
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		identity, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())

		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub-escalates"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: clusterv1alpha1.SystemNamespace, Name: "flotilla-hub"}},
		}
		err = identity.Create(ctx, crb)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "binding cluster-admin to itself must be forbidden, got %v", err)

		// What Flotilla propagates reaches the member through that identity.
		Expect(theFleet.Apply(ctx, []byte(`
apiVersion: v1
kind: Namespace
metadata: {name: identity-probe, labels: {flotilla.io/federated: "true"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: probe, namespace: identity-probe}
data: {k: v}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: probe, namespace: identity-probe}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: probe}]
  placement: {clusterAffinity: {clusterNames: [`+mc.Name+`]}}
`))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			_ = theFleet.Hub.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "identity-probe"}})
		})
		eventually(ctx, func() error {
			return m.Client.Get(ctx, client.ObjectKey{Namespace: "identity-probe", Name: "probe"}, &corev1.ConfigMap{})
		}).WithTimeout(timeUnit).Should(Succeed())
		writes := auditEvents(m.AuditLog(), func(e auditEvent) bool {
			return (e.Verb == "create" || e.Verb == "patch" || e.Verb == "update") && e.ObjectRef != nil &&
				e.ObjectRef.Namespace == "identity-probe" && e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Name == "probe"
		})
		Expect(writes).NotTo(BeEmpty())
		for _, w := range writes {
			Expect(w.User.Username).To(Equal("system:serviceaccount:flotilla-system:flotilla-hub"),
				"every write of the propagated ConfigMap must come from the hub's scoped identity, not CAPI's admin kubeconfig")
		}
	}, SpecTimeout(4*time.Minute))

	It("enrols two CAPI Clusters of the same name in two namespaces, ignores an unlabelled one, and removes a deleted one's member and credentials", func(ctx SpecContext) {
		enrolled := map[string]string{fleet.EnrolLabel: "true", "topology.kubernetes.io/region": "ap-south"}
		small := []fleet.NodePool{{Name: "worker", Count: 1, CPU: "2", Memory: "8Gi", Pods: 110}}
		specs := []fleet.MemberSpec{
			{Name: "twin", Namespace: "team-a", Labels: enrolled, NodePools: small},
			{Name: "twin", Namespace: "team-b", Labels: enrolled, NodePools: small},
			{Name: "loner", Namespace: "team-a", Labels: map[string]string{}, NodePools: small},
		}
		members := make([]*fleet.Member, len(specs))
		errs := make(chan error, len(specs))
		for i, spec := range specs {
			go func(i int, spec fleet.MemberSpec) {
				var err error
				members[i], err = theFleet.AddMember(ctx, spec)
				errs <- err
			}(i, spec)
		}
		for range specs {
			Expect(<-errs).NotTo(HaveOccurred())
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, m := range members {
				_ = theFleet.DeleteCluster(ctx, m)
			}
			for _, m := range members {
				theFleet.RemoveMember(m)
			}
		})

		a, b := readyMember(ctx, members[0]), readyMember(ctx, members[1])
		Expect(a.Name).NotTo(Equal(b.Name), "the twins need distinct member names")
		Expect([]string{a.Name, b.Name}).To(ContainElement(HavePrefix("twin-")))

		Consistently(ctx, func() *clusterv1alpha1.MemberCluster {
			mc, _ := memberOf(ctx, members[2])
			return mc
		}).WithTimeout(20*time.Second).WithPolling(2*time.Second).Should(BeNil(), "an unlabelled Cluster must not enrol")

		Expect(theFleet.DeleteCluster(ctx, members[1])).To(Succeed())
		eventually(ctx, func(g Gomega) {
			mc, err := memberOf(ctx, members[1])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mc).To(BeNil(), "member of the deleted Cluster")
			err = theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: clusterv1alpha1.HubIdentitySecretName(b.Name)}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "hub identity Secret of %s: %v", b.Name, err)
			err = theFleet.Hub.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ExecutionNamespacePrefix + b.Name}, &corev1.Namespace{})
			g.Expect(apierrors.IsNotFound(err) || isTerminating(ctx, clusterv1alpha1.ExecutionNamespacePrefix+b.Name)).To(BeTrue(), "execution namespace of %s: %v", b.Name, err)
		}).WithTimeout(3 * timeUnit).Should(Succeed())
		// The other twin is untouched.
		Expect(readyMember(ctx, members[0]).Name).To(Equal(a.Name))
	}, SpecTimeout(8*time.Minute))
})

func isTerminating(ctx context.Context, name string) bool {
	ns := &corev1.Namespace{}
	return theFleet.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, ns) == nil && !ns.DeletionTimestamp.IsZero()
}
