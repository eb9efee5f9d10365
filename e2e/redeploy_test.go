package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// redeployWorkloads is how many Deployments the redeploy applies twice: 100
// × 2 replicas Duplicated over the three members are 200 Pods in each, and
// two such generations, the deleted one's Pods still terminating, do not fit
// member1's and member2's 220 Pods.
const redeployWorkloads = 100

// redeployManifests is a policy Duplicating every Deployment labelled
// spec=redeploy over the three members, and the Deployments, each 2 × 10m CPU.
func redeployManifests(ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s, labels: {flotilla.io/federated: "true"}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: redeploy, namespace: %[1]s}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {spec: redeploy}}}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
`, ns)
	for i := range redeployWorkloads {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: w%03[2]d, namespace: %[1]s, labels: {spec: redeploy}}
spec:
  replicas: 2
  selector: {matchLabels: {app: w%03[2]d}}
  template:
    metadata: {labels: {app: w%03[2]d}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 10m}}}
`, ns, i)
	}
	return b.String()
}

// placedEverywhere waits until every binding of ns is Scheduled=True on the
// three members and fully applied with its replicas Ready. Every poll also
// checks that no binding says Success on fewer members (a lie about a short
// placement), failing the spec on the first one seen.
func placedEverywhere(ctx context.Context, ns string, timeout time.Duration) {
	short := map[string]bool{}
	eventually(ctx, func(g Gomega) {
		list := &workv1alpha1.ResourceBindingList{}
		Expect(theFleet.Hub.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		done := 0
		var waiting []string
		for i := range list.Items {
			b := &list.Items[i]
			c := conditions.Get(b, workv1alpha1.ConditionScheduled)
			if c == nil {
				waiting = append(waiting, b.Name+" undecided")
				continue
			}
			if c.Reason == workv1alpha1.BindingReasonSuccess {
				Expect(b.Spec.Clusters).To(HaveLen(3), "binding %s says Scheduled=True/Success placed on %v: %s", b.Name, b.Spec.Clusters, c.Message)
			}
			if c.Reason == workv1alpha1.BindingReasonPartiallyScheduled {
				short[b.Name] = true
			}
			switch {
			case c.Status != metav1.ConditionTrue:
				waiting = append(waiting, b.Name+" "+c.Reason+": "+c.Message)
			case !conditions.IsTrue(b, workv1alpha1.ConditionFullyApplied) || b.Status.ReadyReplicas != 3*b.Spec.Replicas:
				waiting = append(waiting, fmt.Sprintf("%s %d of %d replicas Ready", b.Name, b.Status.ReadyReplicas, 3*b.Spec.Replicas))
			default:
				done++
			}
		}
		if len(waiting) > 3 {
			waiting = append(waiting[:3], fmt.Sprintf("%d more", len(waiting)-3))
		}
		g.Expect(done).To(Equal(redeployWorkloads), "of %d bindings: %s", len(list.Items), strings.Join(waiting, "; "))
	}).WithTimeout(timeout).Should(Succeed())
	AddReportEntry("redeploy of "+ns, fmt.Sprintf("%d bindings on all three members; %d were placed short on the way and completed", redeployWorkloads, len(short)))
}

// deploymentsIn counts the Deployments of ns in a member.
func deploymentsIn(ctx context.Context, m *fleet.Member, ns string) (int, error) {
	list := &appsv1.DeploymentList{}
	if err := m.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// The GitOps-style redeploy of issue 43, as a new user does it on `make dev`:
// workloads in one namespace, the namespace deleted on the hub and the same
// workloads applied at once in a new one, while the old Pods still fill the
// members; then the Karmada lab, which once failed in that state.
var _ = Describe("Redeploy", Ordered, func() {
	It("places every re-applied workload on all the members it names, never says Success while short, and removes the deleted namespace's objects within 60 s", func(ctx SpecContext) {
		members := []*fleet.Member{theFleet.Member("member1"), theFleet.Member("member2"), theFleet.Member("member3")}
		// A member not Ready yet is no candidate (that is no short
		// placement): the spec starts on a fleet that is up.
		for _, m := range members {
			readyMember(ctx, m)
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, ns := range []string{"redeploy-a", "redeploy-b"} {
				_ = theFleet.Hub.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
		})

		By(fmt.Sprintf("%d Deployments × 2 replicas Duplicated over three members", redeployWorkloads))
		Expect(theFleet.Apply(ctx, []byte(redeployManifests("redeploy-a")))).To(Succeed())
		placedEverywhere(ctx, "redeploy-a", 4*timeUnit)

		By("deleting the namespace on the hub and applying the same workloads in a new one at once")
		deleted := time.Now()
		Expect(theFleet.Hub.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "redeploy-a"}})).To(Succeed())
		Expect(theFleet.Apply(ctx, []byte(redeployManifests("redeploy-b")))).To(Succeed())

		// The deleted namespace's objects leave every member within 60 s,
		// watched beside the new placement.
		var wg sync.WaitGroup
		gone := make(map[string]time.Duration)
		var mu sync.Mutex
		for _, m := range members {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for {
					n, err := deploymentsIn(ctx, m, "redeploy-a")
					if err == nil && n == 0 {
						mu.Lock()
						gone[m.Name()] = time.Since(deleted)
						mu.Unlock()
						return
					}
					if time.Since(deleted) > 60*time.Second {
						Fail(fmt.Sprintf("%d Deployments of the deleted namespace still in %s 60 s after its deletion (%v)", n, m.Name(), err))
					}
					time.Sleep(500 * time.Millisecond)
				}
			}()
		}

		By("every re-applied binding ends on all three members, none saying Success while short")
		placedEverywhere(ctx, "redeploy-b", 6*timeUnit)
		wg.Wait()
		AddReportEntry("deleted namespace's Deployments gone from the members", fmt.Sprint(gone))

		By("deleting the re-applied namespace, then the Karmada lab at once")
		Expect(theFleet.Hub.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "redeploy-b"}})).To(Succeed())
		karmadaLab(ctx)
	}, SpecTimeout(20*time.Minute))
})
