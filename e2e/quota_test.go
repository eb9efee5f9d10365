package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// milliCPUDeployment is a Deployment of replicas × 100m CPU.
func milliCPUDeployment(ns, name string, replicas int) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s, labels: {spec: quota}}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 100m}}}
`, name, ns, replicas, name, name)
}

// dividedPolicy spreads the namespace's quota-labelled Deployments over
// members by equal weights.
func dividedPolicy(ns string, members ...string) string {
	return fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: quota, namespace: %s}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {spec: quota}}}]
  placement:
    clusterAffinity: {clusterNames: [%s]}
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}
`, ns, strings.Join(members, ", "))
}

// hubKubectl runs bin/kubectl against the hub; it returns stdout and stderr
// (where kubectl prints admission warnings).
func hubKubectl(ctx context.Context, stdin string, args ...string) (string, string) {
	return runHubCommand(ctx, "kubectl", stdin, args...)
}

func hubKubectlFlotilla(ctx context.Context, args ...string) string {
	out, _ := runHubCommand(ctx, "kubectl-flotilla", "", args...)
	return out
}

func runHubCommand(ctx context.Context, binary, stdin string, args ...string) (string, string) {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "bin", binary), append([]string{"--kubeconfig", theFleet.Hub.Kubeconfig()}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "%s %s: %s", binary, strings.Join(args, " "), stderr.String())
	return stdout.String(), stderr.String()
}

func placedTotal(b *workv1alpha1.ResourceBinding) int32 {
	var n int32
	for _, c := range b.Spec.Clusters {
		n += c.Replicas
	}
	return n
}

func federatedQuota(ctx context.Context, g Gomega, ns, name string) *policyv1alpha1.FederatedResourceQuota {
	q := &policyv1alpha1.FederatedResourceQuota{}
	g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
	return q
}

func scheduledOf(ctx context.Context, g Gomega, ns, name string) *metav1.Condition {
	b := deploymentBinding(ctx, ns, name)
	g.Expect(b).NotTo(BeNil(), "no binding for Deployment %s/%s", ns, name)
	c := conditions.Get(b, workv1alpha1.ConditionScheduled)
	g.Expect(c).NotTo(BeNil(), "binding of %s not decided", name)
	return c
}

var _ = Describe("Quota", func() {
	It("holds a namespace to its fleet-wide envelope, warns at apply time, and places a waiting workload as soon as another scales down", func(ctx SpecContext) {
		// The 64-CPU envelope scaled to the fleet (7/7/15 CPU free): 6.4 CPU
		// over three members, workloads of 100m replicas.
		const ns = "quota-envelope"
		for _, m := range theFleet.Members()[:3] {
			readyMember(ctx, m)
		}
		federatedNamespace(ctx, ns)
		Expect(theFleet.Apply(ctx, []byte(fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: tenant, namespace: %s}
spec:
  overall: {cpu: 6400m}
`, ns)+"---"+dividedPolicy(ns, "member1", "member2", "member3")+
			"---"+milliCPUDeployment(ns, "a", 40)+"---"+milliCPUDeployment(ns, "b", 20)))).To(Succeed())

		By("workloads totalling 6 CPU place")
		for _, name := range []string{"a", "b"} {
			placement, err := theFleet.WaitWorkloadReady(ctx, ns, "Deployment", name, 3*timeUnit)
			Expect(err).NotTo(HaveOccurred())
			AddReportEntry("placement of "+name, placement)
		}
		eventually(ctx, func(g Gomega) {
			q := federatedQuota(ctx, g, ns, "tenant")
			g.Expect(conditions.IsTrue(q, policyv1alpha1.QuotaConditionReady)).To(BeTrue(), "Ready: %+v", q.Status.Conditions)
			used := q.Status.OverallUsed[corev1.ResourceCPU]
			g.Expect(used.String()).To(Equal("6"))
		}).WithTimeout(timeUnit).Should(Succeed())

		By("one more asking 800m is admitted with a warning, and its binding waits with QuotaExceeded")
		_, warning := hubKubectl(ctx, milliCPUDeployment(ns, "c", 8), "apply", "-f", "-")
		Expect(warning).To(ContainSubstring("Warning: FederatedResourceQuota quota-envelope/tenant: cpu: requested 800m, used 6 of 6400m, 400m left; the workload is admitted"))
		eventually(ctx, func(g Gomega) {
			c := scheduledOf(ctx, g, ns, "c")
			g.Expect(c.Reason).To(Equal(workv1alpha1.BindingReasonQuotaExceeded), c.Message)
			g.Expect(c.Message).To(Equal("FederatedResourceQuota quota-envelope/tenant: cpu: requested 800m, used 6 of 6400m, 400m left"))
		}).WithTimeout(timeUnit).Should(Succeed())

		By("scaling a down by 400m lets c place with no other action")
		scaled := time.Now()
		_, warning = hubKubectl(ctx, "", "-n", ns, "scale", "deployment/a", "--replicas=36")
		Expect(warning).To(BeEmpty())
		var shrunk time.Duration // until a's binding is placed at 36
		eventually(ctx, func(g Gomega) {
			if a := deploymentBinding(ctx, ns, "a"); shrunk == 0 && a != nil && a.Spec.Replicas == 36 && placedTotal(a) == 36 {
				shrunk = time.Since(scaled)
			}
			c := scheduledOf(ctx, g, ns, "c")
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		}).WithTimeout(timeUnit).WithPolling(100 * time.Millisecond).Should(Succeed())
		AddReportEntry("kubectl scale → a placed at 36 → c placed", fmt.Sprintf("%v, %v", shrunk.Round(time.Millisecond), time.Since(scaled).Round(time.Millisecond)))
		_, err := theFleet.WaitWorkloadReady(ctx, ns, "Deployment", "c", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		eventually(ctx, func(g Gomega) {
			q := federatedQuota(ctx, g, ns, "tenant")
			used := q.Status.OverallUsed[corev1.ResourceCPU]
			g.Expect(used.String()).To(Equal("6400m"))
		}).WithTimeout(timeUnit).Should(Succeed())
		out := hubKubectlFlotilla(ctx, "quota", "-n", ns)
		AddReportEntry("kubectl flotilla quota -n "+ns, out)
		Expect(out).To(MatchRegexp(`quota-envelope\s+tenant\s+cpu\s+6400m\s+6400m\s+0\s+-`))
	}, SpecTimeout(10*time.Minute))

	It("puts a ResourceQuota in each statically assigned member and reports its usage", func(ctx SpecContext) {
		const ns = "quota-static"
		for _, m := range theFleet.Members()[:3] {
			readyMember(ctx, m)
		}
		federatedNamespace(ctx, ns)
		Expect(theFleet.Apply(ctx, []byte(fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: tenant, namespace: %s}
spec:
  overall: {cpu: "2", pods: "20"}
  staticAssignments:
  - {clusterName: member1, hard: {cpu: "1", pods: "10"}}
  - {clusterName: member2, hard: {cpu: "1", pods: "10"}}
`, ns)))).To(Succeed())

		By("each assigned member holds the ResourceQuota, enforcing it")
		for _, name := range []string{"member1", "member2"} {
			m := theFleet.Member(name)
			eventually(ctx, func(g Gomega) {
				rq := &corev1.ResourceQuota{}
				g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant"}, rq)).To(Succeed())
				cpu, pods := rq.Spec.Hard[corev1.ResourceCPU], rq.Spec.Hard[corev1.ResourcePods]
				g.Expect(cpu.String() + " " + pods.String()).To(Equal("1 10"))
				// The member's quota controller has taken it up: its usage
				// is counted from here on (docs/quota.md, static
				// assignments: Pods created before a quota is taken up are
				// counted only at the member's next full quota sync).
				g.Expect(rq.Status.Hard).To(HaveKey(corev1.ResourceCPU))
			}).WithTimeout(2 * timeUnit).Should(Succeed())
		}
		Expect(theFleet.Apply(ctx, []byte(dividedPolicy(ns, "member1", "member2")+"---"+milliCPUDeployment(ns, "web", 4)))).To(Succeed())
		placement, err := theFleet.WaitWorkloadReady(ctx, ns, "Deployment", "web", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(placement).To(Equal("member1:2 member2:2"))

		By("the members' usage shows in the quota's status")
		eventually(ctx, func(g Gomega) {
			q := federatedQuota(ctx, g, ns, "tenant")
			g.Expect(conditions.IsTrue(q, policyv1alpha1.QuotaConditionStaticAssignmentsApplied)).To(BeTrue(), "%+v", q.Status.Conditions)
			g.Expect(q.Status.AggregatedStatus).To(HaveLen(2))
			for _, st := range q.Status.AggregatedStatus {
				cpu, pods := st.Used[corev1.ResourceCPU], st.Used[corev1.ResourcePods]
				g.Expect(cpu.String()+" "+pods.String()).To(Equal("200m 2"), "used in %s", st.ClusterName)
			}
		}).WithTimeout(3 * timeUnit).Should(Succeed())
		out := hubKubectlFlotilla(ctx, "quota", "-n", ns)
		AddReportEntry("kubectl flotilla quota -n "+ns, out)
		Expect(out).To(MatchRegexp(`quota-static\s+tenant\s+cpu\s+400m\s+2\s+1600m\s+member1=200m/1, member2=200m/1`))

		By("an assignment that goes takes its ResourceQuota out of the member")
		q := federatedQuota(ctx, Default, ns, "tenant")
		before := q.DeepCopy()
		q.Spec.StaticAssignments = q.Spec.StaticAssignments[:1]
		Expect(theFleet.Hub.Client.Patch(ctx, q, client.MergeFrom(before))).To(Succeed())
		eventually(ctx, func() error {
			return theFleet.Member("member2").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant"}, &corev1.ResourceQuota{})
		}).WithTimeout(timeUnit).Should(MatchError(ContainSubstring("not found")))
	}, SpecTimeout(10*time.Minute))
})
