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
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// oneCPU is the requirement of the specs' replicas.
var oneCPU = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}

// fleetFit is how many 1-CPU replicas each default member holds according to
// its capacity model, waiting until no Pod of an earlier spec is left in any
// member and every model accounts for exactly the Pods the member has (the
// estimator publishes only when its model changes, so the model's age says
// nothing; its Pod count does).
func fleetFit(ctx context.Context) map[string]int64 {
	fit := map[string]int64{}
	eventually(ctx, func(g Gomega) {
		for _, m := range theFleet.Members()[:3] {
			pods := &corev1.PodList{}
			g.Expect(m.Client.List(ctx, pods)).To(Succeed())
			live := int32(0)
			for _, p := range pods.Items {
				g.Expect(p.Namespace).To(BeElementOf("kube-system", clusterv1alpha1.SystemNamespace), "pod %s/%s of an earlier spec is still in %s", p.Namespace, p.Name, m.Name())
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					live++
				}
			}
			mc, err := memberOf(ctx, m)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mc).NotTo(BeNil(), "%s is not enrolled yet", m.Name())
			g.Expect(mc.Status.CapacityModel).NotTo(BeNil())
			g.Expect(mc.Status.CapacityModel.ObservedPods).To(Equal(live), "capacity model of %s does not account for its current Pods yet", mc.Name)
			fit[mc.Name] = capacity.Fit(mc.Status.CapacityModel, oneCPU)
		}
	}).WithTimeout(3 * timeUnit).Should(Succeed())
	return fit
}

// fitNow is what each default member's current model holds of 1-CPU
// replicas, with the Pods the model observed, for failure messages.
func fitNow(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, m := range theFleet.Members()[:3] {
		mc, err := memberOf(ctx, m)
		if err != nil || mc == nil || mc.Status.CapacityModel == nil {
			out[m.Name()] = fmt.Sprintf("no model (%v)", err)
			continue
		}
		out[m.Name()] = fmt.Sprintf("fit %d, %d pods observed at %s", capacity.Fit(mc.Status.CapacityModel, oneCPU),
			mc.Status.CapacityModel.ObservedPods, mc.Status.CapacityModel.ObservedTime.Format(time.RFC3339))
	}
	return out
}

// pendingPods counts the Pods of a namespace not Running in the default members.
func pendingPods(ctx context.Context, ns string) int {
	n := 0
	for _, m := range theFleet.Members()[:3] {
		pods := &corev1.PodList{}
		Expect(m.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				n++
			}
		}
	}
	return n
}

func dynamicPolicy(ns, name string, selector string) string {
	return fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %s, namespace: %s}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, %s}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
`, name, ns, selector)
}

func cpuDeployment(ns, name string, replicas int) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s, labels: {spec: scheduling}}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "1"}}}
`, name, ns, replicas, name, name)
}

// binding reads the ResourceBinding of a Deployment template.
func deploymentBinding(ctx context.Context, ns, name string) *workv1alpha1.ResourceBinding {
	list := &workv1alpha1.ResourceBindingList{}
	Expect(theFleet.Hub.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		if list.Items[i].Spec.Resource.Kind == "Deployment" && list.Items[i].Spec.Resource.Name == name {
			return &list.Items[i]
		}
	}
	return nil
}

var _ = Describe("Scheduling", func() {
	It("divides by dynamic weight where replicas fit, leaving no Pending pod, and keeps the placement when asked for more than fits", func(ctx SpecContext) {
		fit := fleetFit(ctx)
		total := fit["member1"] + fit["member2"] + fit["member3"]
		AddReportEntry("1-CPU replicas each member holds", fit)
		Expect(fit["member3"]).To(BeNumerically(">", fit["member1"]), "member3 has the larger nodes")

		federatedNamespace(ctx, "dynamic")
		replicas := int(total) - 4
		Expect(theFleet.Apply(ctx, []byte(cpuDeployment("dynamic", "spread", replicas)+"---"+dynamicPolicy("dynamic", "spread", "name: spread")))).To(Succeed())
		placement, err := theFleet.WaitWorkloadReady(ctx, "dynamic", "Deployment", "spread", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred(), "all %d replicas Ready in members", replicas)
		AddReportEntry("dynamic placement of "+fmt.Sprint(replicas)+" × 1 CPU", placement)
		b := deploymentBinding(ctx, "dynamic", "spread")
		for _, c := range b.Spec.Clusters {
			Expect(int64(c.Replicas)).To(BeNumerically("<=", fit[c.Name]), "%s got more than it holds", c.Name)
		}
		Expect(pendingPods(ctx, "dynamic")).To(BeZero())

		By("asking for more than the fleet holds: Unschedulable, and the running placement stays")
		Expect(theFleet.Apply(ctx, []byte(cpuDeployment("dynamic", "spread", int(total)+10)))).To(Succeed())
		eventually(ctx, func(g Gomega) {
			b := deploymentBinding(ctx, "dynamic", "spread")
			g.Expect(b).NotTo(BeNil())
			c := conditions.Get(b, workv1alpha1.ConditionScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(workv1alpha1.BindingReasonUnschedulable), c.Message)
		}).WithTimeout(timeUnit).Should(Succeed())
		Consistently(ctx, func() int { return pendingPods(ctx, "dynamic") }).WithTimeout(10 * time.Second).WithPolling(2 * time.Second).Should(BeZero())
	}, SpecTimeout(10*time.Minute))

	It("places 50 workloads applied at once without overcommitting any member", func(ctx SpecContext) {
		fit := fleetFit(ctx)
		total := fit["member1"] + fit["member2"] + fit["member3"]
		federatedNamespace(ctx, "burst")
		manifests := dynamicPolicy("burst", "burst", "labelSelector: {matchLabels: {spec: scheduling}}")
		for i := range 50 {
			manifests += "---" + cpuDeployment("burst", fmt.Sprintf("w%02d", i), 1)
		}
		Expect(theFleet.Apply(ctx, []byte(manifests))).To(Succeed())

		// Every binding is decided; exactly as many are placed as the fleet holds.
		var scheduled int64
		eventually(ctx, func(g Gomega) {
			list := &workv1alpha1.ResourceBindingList{}
			g.Expect(theFleet.Hub.Client.List(ctx, list, client.InNamespace("burst"))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(50))
			scheduled = 0
			perMember := map[string]int64{}
			refusal := ""
			for i := range list.Items {
				c := conditions.Get(&list.Items[i], workv1alpha1.ConditionScheduled)
				g.Expect(c).NotTo(BeNil(), "binding %s not decided", list.Items[i].Name)
				if c.Status == metav1.ConditionTrue {
					scheduled++
					for _, t := range list.Items[i].Spec.Clusters {
						perMember[t.Name] += int64(t.Replicas)
					}
				} else {
					g.Expect(c.Reason).To(Equal(workv1alpha1.BindingReasonUnschedulable))
					refusal = list.Items[i].Name + " at " + c.LastTransitionTime.Format(time.RFC3339) + ": " + c.Message
				}
			}
			for name, n := range perMember {
				g.Expect(n).To(BeNumerically("<=", fit[name]), "%s overcommitted", name)
			}
			// On a shortfall, say what the scheduler saw and what the
			// members' models say now.
			g.Expect(scheduled).To(Equal(min(total, 50)), "placed per member %v of fit %v; models now %v; a refusal: %s",
				perMember, fit, fitNow(ctx), refusal)
		}).WithTimeout(3 * timeUnit).Should(Succeed())
		AddReportEntry("burst of 50 × 1 CPU", fmt.Sprintf("%d placed, fleet holds %d", scheduled, total))

		By("no Pod is left Pending in any member")
		eventually(ctx, func() int { return pendingPods(ctx, "burst") }).WithTimeout(2 * timeUnit).Should(BeZero())
		Consistently(ctx, func() int { return pendingPods(ctx, "burst") }).WithTimeout(10 * time.Second).WithPolling(2 * time.Second).Should(BeZero())
	}, SpecTimeout(10*time.Minute))
})
