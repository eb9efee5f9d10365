package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// nodeByNodeFit counts, from the member's real Nodes and Pods, how many
// replicas requesting cpu fit: per Ready node, floor((allocatable − requests
// of its non-terminal Pods) / cpu), bounded by its free pod slots.
func nodeByNodeFit(ctx context.Context, m *fleet.Member, cpu resource.Quantity) int64 {
	nodes := &corev1.NodeList{}
	Expect(m.Client.List(ctx, nodes)).To(Succeed())
	pods := &corev1.PodList{}
	Expect(m.Client.List(ctx, pods)).To(Succeed())
	var total int64
	for _, n := range nodes.Items {
		if !isReady(&n) || n.Spec.Unschedulable {
			continue
		}
		freeCPU := n.Status.Allocatable.Cpu().MilliValue()
		freePods := n.Status.Allocatable.Pods().Value()
		for _, p := range pods.Items {
			if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			freePods--
			for _, c := range p.Spec.Containers {
				freeCPU -= c.Resources.Requests.Cpu().MilliValue()
			}
		}
		total += min(freeCPU/cpu.MilliValue(), freePods)
	}
	return total
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

var _ = Describe("Capacity estimator", func() {
	It("publishes a model whose fit equals a node-by-node fit over the member's real Nodes and Pods", func(ctx SpecContext) {
		m := theFleet.Member("member3")
		// The specs run in random order: this one may come before member3 is enrolled.
		readyMember(ctx, m)
		// Pods of uneven size fill the nodes unevenly.
		for i, cpu := range []string{"700m", "1300m", "250m"} {
			Expect(m.Client.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("filler-%d", i)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
				}}},
			})).To(Succeed())
		}
		DeferCleanup(func(ctx SpecContext) {
			for i := range 3 {
				_ = m.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("filler-%d", i)}})
			}
		})
		eventually(ctx, func(g Gomega) {
			for i := range 3 {
				p := &corev1.Pod{}
				g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("filler-%d", i)}, p)).To(Succeed())
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}).WithTimeout(timeUnit).Should(Succeed())

		for _, cpu := range []string{"100m", "300m", "1", "2500m"} {
			q := resource.MustParse(cpu)
			eventually(ctx, func(g Gomega) {
				mc, err := memberOf(ctx, m)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(mc).NotTo(BeNil(), "no MemberCluster for %s", m.Name())
				g.Expect(mc.Status.CapacityModel).NotTo(BeNil())
				pods := &corev1.PodList{}
				g.Expect(m.Client.List(ctx, pods)).To(Succeed())
				g.Expect(mc.Status.CapacityModel.ObservedPods).To(BeEquivalentTo(len(pods.Items)), "the model does not account for the member's current Pods yet")
				model := capacity.Fit(mc.Status.CapacityModel, &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: q}})
				g.Expect(model).To(Equal(nodeByNodeFit(ctx, m, q)), "replicas of %s CPU that fit in %s: model vs node by node", cpu, m.Name())
			}).WithTimeout(timeUnit).Should(Succeed())
		}
	}, SpecTimeout(4*time.Minute))
})
