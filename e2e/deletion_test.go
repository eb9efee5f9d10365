package e2e

import (
	"context"
	"fmt"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// What is kept when something is deleted, as a Karmada user expects:
// deleting a policy keeps its workloads running, a new policy adopts them
// without restarting a Pod, deleting the template removes them.
var _ = Describe("Deletion", func() {
	It("keeps a workload running when its policy is deleted, lets a new policy adopt it without restarting its Pods, and removes it with its template", func(ctx SpecContext) {
		const ns, name = "keep", "web"
		federatedNamespace(ctx, ns)
		policy := func(policyName string) string {
			return fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %s, namespace: keep}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
`, policyName)
		}
		Expect(theFleet.Apply(ctx, []byte(policy("first")+"---"+milliCPUDeployment(ns, name, 2)))).To(Succeed())
		_, err := theFleet.WaitWorkloadReady(ctx, ns, "Deployment", name, 2*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		member := theFleet.Member("member1")
		pods := podUIDs(ctx, member.Client, ns)
		Expect(pods).To(HaveLen(2))

		By("deleting the policy: the Deployment and its Pods stay")
		Expect(theFleet.Hub.Client.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}})).To(Succeed())
		eventually(ctx, func() string {
			d := &appsv1.Deployment{}
			if err := theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
				return err.Error()
			}
			return d.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation]
		}).WithTimeout(timeUnit).Should(BeEmpty(), "the template unclaimed")
		Consistently(ctx, func() []string { return podUIDs(ctx, member.Client, ns) }).
			WithTimeout(10*time.Second).WithPolling(2*time.Second).Should(Equal(pods), "the same Pods running in member1")

		By("a new policy adopts it: the same Pods")
		Expect(theFleet.Apply(ctx, []byte(policy("second")))).To(Succeed())
		eventually(ctx, func() string {
			b := deploymentBinding(ctx, ns, name)
			if b == nil {
				return "no binding"
			}
			return b.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation]
		}).WithTimeout(timeUnit).Should(Equal("second"))
		Consistently(ctx, func() []string { return podUIDs(ctx, member.Client, ns) }).
			WithTimeout(6*time.Second).WithPolling(2*time.Second).Should(Equal(pods), "the same Pods after the adoption")

		By("deleting the template removes it from the member")
		Expect(theFleet.Hub.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		eventually(ctx, func() bool {
			return apierrors.IsNotFound(member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{}))
		}).WithTimeout(timeUnit).Should(BeTrue())
	}, SpecTimeout(6*time.Minute))
})

// podUIDs lists the UIDs of the Pods of a namespace, sorted.
func podUIDs(ctx context.Context, c client.Client, ns string) []string {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, string(p.UID))
		}
	}
	sort.Strings(out)
	return out
}
