package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// conditionStatus reads a v1beta2 condition of a CAPI object on the hub.
func clusterCondition(ctx context.Context, name, conditionType string) func() metav1.ConditionStatus {
	return func() metav1.ConditionStatus {
		c, err := theFleet.Cluster(ctx, theFleet.Member(name))
		if err != nil {
			return "Error: " + metav1.ConditionStatus(err.Error())
		}
		if cond := conditions.Get(c, conditionType); cond != nil {
			return cond.Status
		}
		return "Missing"
	}
}

var _ = Describe("Local fleet", func() {
	It("brings each member's CAPI Cluster to Available through Cluster API's own reconcilers", func(ctx SpecContext) {
		for _, m := range theFleet.Members() {
			eventually(ctx, clusterCondition(ctx, m.Name(), capiv1.AvailableCondition)).WithTimeout(2*time.Minute).
				Should(Equal(metav1.ConditionTrue), "Cluster %s Available", m.Name())
			Expect(clusterCondition(ctx, m.Name(), capiv1.ClusterRemoteConnectionProbeCondition)()).To(Equal(metav1.ConditionTrue))
		}
	}, SpecTimeout(3*time.Minute))

	It("matches every Machine to its kwok Node and reports NodeHealthy", func(ctx SpecContext) {
		m := theFleet.Member("member1")
		for _, node := range m.NodeNames() {
			eventually(ctx, func(g Gomega) {
				machine := &capiv1.Machine{}
				g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: m.Spec.Namespace, Name: node}, machine)).To(Succeed())
				g.Expect(machine.Status.NodeRef.Name).To(Equal(node))
				g.Expect(conditions.IsTrue(machine, capiv1.MachineNodeHealthyCondition)).To(BeTrue(), "NodeHealthy of %s", node)
			}).WithTimeout(2 * time.Minute).Should(Succeed())
		}
	}, SpecTimeout(3*time.Minute))

	It("runs a Deployment applied directly to a member to Ready through kwok, within the nodes' capacity", func(ctx SpecContext) {
		m := theFleet.Member("member3")
		// 2 nodes × 8 CPU hold 15 replicas of 1 CPU next to the estimator (50m), not 20: real scheduling.
		// The specs run in random order: this one may come before the estimator's
		// Pod is bound (16 would fit) or while another spec's Pods on member3 are
		// still terminating (fewer would). Start from that settled state.
		readyMember(ctx, m)
		eventually(ctx, func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(m.Client.List(ctx, pods)).To(Succeed())
			estimators := 0
			for _, p := range pods.Items {
				g.Expect(p.Namespace).To(BeElementOf("kube-system", clusterv1alpha1.SystemNamespace), "Pod %s/%s of another spec is still on %s", p.Namespace, p.Name, m.Name())
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "add-on Pod %s is not bound yet", p.Name)
				if strings.HasPrefix(p.Name, "flotilla-estimator-") {
					estimators++
				}
			}
			g.Expect(estimators).To(Equal(1), "the estimator's Pod on %s", m.Name())
			g.Expect(nodeByNodeFit(ctx, m, resource.MustParse("1"))).To(BeEquivalentTo(15))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		deploy := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "direct"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](20),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "direct"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "direct"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}}},
				},
			},
		}
		Expect(m.Client.Create(ctx, deploy)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = m.Client.Delete(ctx, deploy) })
		eventually(ctx, func() int32 {
			_ = m.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)
			return deploy.Status.ReadyReplicas
		}).WithTimeout(90 * time.Second).Should(Equal(int32(15)))
		Consistently(ctx, func() int32 {
			_ = m.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)
			return deploy.Status.ReadyReplicas
		}).WithTimeout(5 * time.Second).Should(Equal(int32(15)))
	}, SpecTimeout(4*time.Minute))

	It("shows a NotReady node on its Machine's NodeHealthy, and recovers", func(ctx SpecContext) {
		m := theFleet.Member("member2")
		node := m.NodeNames()[0]
		machineHealthy := func() bool {
			machine := &capiv1.Machine{}
			if err := theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: m.Spec.Namespace, Name: node}, machine); err != nil {
				return false
			}
			return conditions.IsTrue(machine, capiv1.MachineNodeHealthyCondition)
		}
		eventually(ctx, machineHealthy).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(m.SetNodeNotReady(ctx, node)).To(Succeed())
		eventually(ctx, machineHealthy).WithTimeout(2 * time.Minute).Should(BeFalse())
		Expect(m.SetNodeReady(ctx, node)).To(Succeed())
		eventually(ctx, machineHealthy).WithTimeout(2 * time.Minute).Should(BeTrue())
	}, SpecTimeout(7*time.Minute))

	It("reports RemoteConnectionProbe False while a member's apiserver is stopped, and True once restarted", func(ctx SpecContext) {
		m := theFleet.Member("member2")
		probe := clusterCondition(ctx, m.Name(), capiv1.ClusterRemoteConnectionProbeCondition)
		eventually(ctx, probe).WithTimeout(2 * time.Minute).Should(Equal(metav1.ConditionTrue))
		stopped := time.Now()
		Expect(m.StopAPIServer()).To(Succeed())
		eventually(ctx, probe).WithTimeout(3 * time.Minute).Should(Equal(metav1.ConditionFalse))
		AddReportEntry("apiserver stopped → RemoteConnectionProbe=False", time.Since(stopped).Round(time.Second).String())
		// Cluster API re-reconciles the Cluster when its ClusterCache reconnects,
		// which it does only after disconnecting: 5 failed probes 10 s apart. An
		// outage shorter than that leaves the condition False until the next
		// resync, so the outage here is a real one of over a minute.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(stopped.Add(70 * time.Second))):
		}
		Expect(m.StartAPIServer(ctx)).To(Succeed())
		restarted := time.Now()
		eventually(ctx, probe).WithTimeout(3 * time.Minute).Should(Equal(metav1.ConditionTrue))
		AddReportEntry("apiserver restarted → RemoteConnectionProbe=True", time.Since(restarted).Round(time.Second).String())
	}, SpecTimeout(8*time.Minute))
})
