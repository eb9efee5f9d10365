package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// The user's path on real clusters: members made with
// templates/cluster-template-flotilla.yaml on a management cluster where
// `clusterctl init --infrastructure docker --addon flotilla` installed
// Flotilla. Written against Backend; runs on E2E_BACKEND=kind.
var _ = Describe("A fleet of CAPD clusters", Label(kindLabel), Ordered, func() {
	const namespace, name = "fleet-web", "fleet-web"

	It("enrols each workload cluster made from the flotilla template as a Ready member with its region and zone", func(ctx SpecContext) {
		for _, m := range kindMembers() {
			eventually(ctx, func(g Gomega) {
				mc := &clusterv1alpha1.MemberCluster{}
				g.Expect(theBackend.Hub().Get(ctx, client.ObjectKey{Name: m.Name}, mc)).To(Succeed())
				g.Expect(conditions.IsTrue(mc, clusterv1alpha1.ConditionReady)).To(BeTrue(), "Ready: %+v", conditions.Get(mc, clusterv1alpha1.ConditionReady))
				g.Expect(mc.Spec.Provider).To(Equal("docker"), "the provider, from the DockerCluster infrastructure")
				g.Expect(mc.Spec.Region).To(Equal("local"))
				g.Expect(mc.Spec.Zone).To(HavePrefix("local-"))
			}).WithTimeout(10 * time.Minute).Should(Succeed())
		}
	}, SpecTimeout(12*time.Minute))

	It("divides a Deployment between the members", func(ctx SpecContext) {
		members := kindMembers()
		hub := theBackend.Hub()
		Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: namespace, Labels: map[string]string{policyv1alpha1.FederatedLabel: "true"},
		}})).To(Succeed())
		var names []string
		for _, m := range members {
			names = append(names, m.Name)
		}
		Expect(hub.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: names},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					},
				},
			},
		})).To(Succeed())
		replicas := int32(2 * len(members))
		Expect(hub.Create(ctx, pauseDeployment(namespace, name, replicas))).To(Succeed())

		for _, m := range members {
			eventually(ctx, memberReadyReplicas(ctx, m, namespace, name)).WithTimeout(5*time.Minute).
				Should(Equal(int32(2)), "replicas ready in %s", m.Name)
		}
	}, SpecTimeout(6*time.Minute))

	It("drains a member whose Cluster is deleted before Cluster API removes it: its Machines are held until the replicas run elsewhere", func(ctx SpecContext) {
		members := kindMembers()
		Expect(len(members)).To(BeNumerically(">=", 3), "this spec deletes one member and the next stops another")
		hub, leaving, survivors := theBackend.Hub(), members[len(members)-1], members[:len(members)-1]
		replicas := int32(2 * len(members))
		machines := func(g Gomega) []capiv1.Machine {
			list := &capiv1.MachineList{}
			g.Expect(hub.List(ctx, list, client.InNamespace(leaving.Namespace), client.MatchingLabels{capiv1.ClusterNameLabel: leaving.Name})).To(Succeed())
			return list.Items
		}
		eventually(ctx, func(g Gomega) {
			ms := machines(g)
			g.Expect(ms).NotTo(BeEmpty())
			for _, m := range ms {
				g.Expect(m.Annotations).To(HaveKey(clusterv1alpha1.TerminateHookAnnotation), "Machine %s", m.Name)
			}
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("deleting the CAPI Cluster " + leaving.Name)
		Expect(hub.Delete(ctx, &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: leaving.Namespace, Name: leaving.Name}})).To(Succeed())
		eventually(ctx, func(g Gomega) {
			mc := &clusterv1alpha1.MemberCluster{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: leaving.Name}, mc)).To(Succeed())
			g.Expect(conditions.IsTrue(mc, clusterv1alpha1.ConditionTerminating)).To(BeTrue(), "Terminating: %+v", conditions.Get(mc, clusterv1alpha1.ConditionTerminating))
			g.Expect(mc.Spec.Taints).To(ContainElement(HaveField("Key", clusterv1alpha1.TaintTerminating)))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("the replicas are Ready on the other members while the Cluster and its Machines are still there")
		// Read the Cluster first and the replicas after: a Cluster seen
		// after the replicas were counted was there when they were Ready.
		drainedFirst, gone := false, false
		var last string
		eventually(ctx, func(g Gomega) {
			err := hub.Get(ctx, client.ObjectKey{Namespace: leaving.Namespace, Name: leaving.Name}, &capiv1.Cluster{})
			if apierrors.IsNotFound(err) {
				gone = true
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var sum int32
			for _, m := range survivors {
				sum += memberReadyReplicas(ctx, m, namespace, name)()
			}
			held := len(machines(g))
			last = fmt.Sprintf("%d of %d replicas Ready on %d other members, %d Machines of %s left", sum, replicas, len(survivors), held, leaving.Name)
			drainedFirst = drainedFirst || (sum == replicas && held > 0)
			g.Expect(drainedFirst).To(BeTrue(), last)
		}).WithTimeout(10*time.Minute).Should(Succeed(), func() string { return last })
		Expect(gone).To(BeFalse(), "the Cluster was gone before the replicas were Ready elsewhere (%s)", last)

		By("then Cluster API removes the Cluster, and Flotilla the member")
		eventually(ctx, func(g Gomega) {
			err := hub.Get(ctx, client.ObjectKey{Namespace: leaving.Namespace, Name: leaving.Name}, &capiv1.Cluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Cluster: %v", err)
			err = hub.Get(ctx, client.ObjectKey{Name: leaving.Name}, &clusterv1alpha1.MemberCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "MemberCluster: %v", err)
		}).WithTimeout(10*time.Minute).Should(Succeed(), func() string { return last })
		eventually(ctx, func() int32 {
			var sum int32
			for _, m := range survivors {
				sum += memberReadyReplicas(ctx, m, namespace, name)()
			}
			return sum
		}).WithTimeout(time.Minute).Should(Equal(replicas), "replicas Ready on the members left after the removal")
	}, SpecTimeout(25*time.Minute))

	It("moves the replicas off a member whose control-plane machine is gone", func(ctx SpecContext) {
		// The previous spec deleted the last member; this one stops the
		// control plane of the one before it.
		members := kindMembers()[:len(kindMembers())-1]
		lost, left := members[len(members)-1], members[:len(members)-1]
		replicas := int32(2 * len(kindMembers()))
		Expect(theBackend.StopControlPlane(ctx, lost.Name)).To(Succeed())
		eventually(ctx, func(g Gomega) {
			mc := &clusterv1alpha1.MemberCluster{}
			g.Expect(theBackend.Hub().Get(ctx, client.ObjectKey{Name: lost.Name}, mc)).To(Succeed())
			g.Expect(conditions.IsFalse(mc, clusterv1alpha1.ConditionReady)).To(BeTrue(), "Ready: %+v", conditions.Get(mc, clusterv1alpha1.ConditionReady))
		}).WithTimeout(5 * time.Minute).Should(Succeed())
		// Every replica ends up on the members left.
		eventually(ctx, func() int32 {
			var sum int32
			for _, m := range left {
				sum += memberReadyReplicas(ctx, m, namespace, name)()
			}
			return sum
		}).WithTimeout(15*time.Minute).Should(Equal(replicas), "replicas ready on the members left")
	}, SpecTimeout(25*time.Minute))
})

// kindMembers are the backend's members; the specs need two at least.
func kindMembers() []BackendMember {
	members := theBackend.Members()
	Expect(len(members)).To(BeNumerically(">=", 2), "members of the %s backend", theBackend.Name())
	return members
}

// pauseDeployment is a Deployment of small pause Pods. pause:3.10.2 is the
// sandbox image kubeadm v1.36 asks for: kind's and the offline node image
// (hack/kindimage) hold it, so nothing is pulled.
func pauseDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10.2", ImagePullPolicy: corev1.PullIfNotPresent,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
					}},
				}}},
			},
		},
	}
}

// readyReplicas reads a Deployment's ready replicas in a member; 0 while it
// is absent or the member does not answer.
func memberReadyReplicas(ctx SpecContext, m BackendMember, namespace, name string) func() int32 {
	return func() int32 {
		d := &appsv1.Deployment{}
		if err := m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
			return 0
		}
		return d.Status.ReadyReplicas
	}
}
