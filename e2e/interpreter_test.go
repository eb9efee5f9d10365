package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// workloadCRD is the Workload kind of Karmada's customization examples.
const workloadCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: workloads.workload.example.io}
spec:
  group: workload.example.io
  scope: Namespaced
  names: {plural: workloads, singular: workload, kind: Workload, listKind: WorkloadList}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

const customizedShop = `
apiVersion: workload.example.io/v1alpha1
kind: Workload
metadata: {name: shop, namespace: interp}
spec:
  replicas: 3
  paused: false
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
      - {name: web, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 100m}}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: shop, namespace: interp}
spec:
  resourceSelectors: [{apiVersion: workload.example.io/v1alpha1, kind: Workload, name: shop}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [member1]}, weight: 2}
        - {targetCluster: {clusterNames: [member2]}, weight: 1}
`

var workloadGVK = schema.GroupVersionKind{Group: "workload.example.io", Version: "v1alpha1", Kind: "Workload"}

// installEverywhere creates an object (a CRD) on the hub and in members,
// removed after the spec.
func installEverywhere(ctx context.Context, manifest string, members ...*fleet.Member) {
	Expect(theFleet.Apply(ctx, []byte(manifest))).To(Succeed())
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = theFleet.Hub.Client.Delete(ctx, u.DeepCopy()) })
	for _, m := range members {
		obj := u.DeepCopy()
		Expect(m.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = m.Client.Delete(ctx, obj) })
	}
}

func getWorkload(ctx context.Context, m *fleet.Member, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workloadGVK)
	return u, m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// bindingAndWorks describes a binding and its Works, for failure messages.
func bindingAndWorks(ctx context.Context, ns, name string) string {
	rb := &workv1alpha1.ResourceBinding{}
	if err := theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rb); err != nil {
		return fmt.Sprintf("binding %s/%s: %v", ns, name, err)
	}
	out, _ := json.Marshal(map[string]any{"clusters": rb.Spec.Clusters, "replicas": rb.Spec.Replicas, "status": rb.Status})
	works := &workv1alpha1.WorkList{}
	_ = theFleet.Hub.Client.List(ctx, works, client.MatchingLabels{workv1alpha1.BindingPermanentIDLabel: string(rb.UID)})
	for _, w := range works.Items {
		st, _ := json.Marshal(w.Status)
		out = append(out, []byte(fmt.Sprintf("\nWork %s/%s: %s", w.Namespace, w.Name, st))...)
	}
	return "binding " + string(out)
}

// memberTaints lists every member's taints, for failure messages.
func memberTaints(ctx context.Context) string {
	list := &clusterv1alpha1.MemberClusterList{}
	if err := theFleet.Hub.Client.List(ctx, list); err != nil {
		return err.Error()
	}
	out := ""
	for _, m := range list.Items {
		out += fmt.Sprintf("%s: taints %v; ", m.Name, m.Spec.Taints)
	}
	return out
}

var _ = Describe("Resource interpreter", func() {
	It("divides a CRD workload 2:1 through Karmada's customization and shows its health and aggregated status on the hub", func(ctx SpecContext) {
		m1, m2 := theFleet.Member("member1"), theFleet.Member("member2")
		readyMember(ctx, m1)
		readyMember(ctx, m2)
		federatedNamespace(ctx, "interp")
		installEverywhere(ctx, workloadCRD, m1, m2)

		By("Karmada's customization, only apiVersion changed")
		raw, err := os.ReadFile("../test/integration/api/testdata/karmada/resourceinterpretercustomization-workload.yaml")
		Expect(err).NotTo(HaveOccurred())
		ric := strings.ReplaceAll(string(raw), "config.karmada.io/v1alpha1", "config.flotilla.io/v1alpha1")
		Expect(theFleet.Apply(ctx, []byte(ric))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(ric), &u.Object)).To(Succeed())
			_ = theFleet.Hub.Client.Delete(ctx, u)
		})
		By("both members report the Workload API, so that the scheduler may place it on either")
		eventually(ctx, func(g Gomega) {
			for _, m := range []*fleet.Member{m1, m2} {
				mc, err := memberOf(ctx, m)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(mc).NotTo(BeNil(), "no MemberCluster for %s yet", m.Name())
				served := false
				for _, e := range mc.Status.APIEnablements {
					served = served || e.GroupVersion == "workload.example.io/v1alpha1"
				}
				g.Expect(served).To(BeTrue(), "%s reports workload.example.io/v1alpha1", m.Name())
			}
		}).WithTimeout(2 * timeUnit).Should(Succeed())
		Expect(theFleet.Apply(ctx, []byte(customizedShop))).To(Succeed())

		By("2 in member1 and 1 in member2, written by the customization's ReviseReplica")
		for m, want := range map[*fleet.Member]int64{m1: 2, m2: 1} {
			eventually(ctx, func() (int64, error) {
				u, err := getWorkload(ctx, m, "interp", "shop")
				if err != nil {
					return -1, err
				}
				n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
				return n, nil
			}).WithTimeout(2*timeUnit).Should(Equal(want), func() string {
				return fmt.Sprintf("spec.replicas of shop in %s; %s", m.Name(), bindingAndWorks(ctx, "interp", "shop-workload"))
			})
		}

		By("each member's controller (here the spec) reports its replicas ready")
		for m, ready := range map[*fleet.Member]int64{m1: 2, m2: 1} {
			u, err := getWorkload(ctx, m, "interp", "shop")
			Expect(err).NotTo(HaveOccurred())
			u.Object["status"] = map[string]any{"readyReplicas": ready, "observedGeneration": u.GetGeneration()}
			Expect(m.Client.Status().Update(ctx, u)).To(Succeed())
		}

		By("the binding shows both members Healthy (InterpretHealth), and the hub's Workload 3 ready (AggregateStatus)")
		rb := &workv1alpha1.ResourceBinding{}
		eventually(ctx, func(g Gomega) {
			g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "interp", Name: "shop-workload"}, rb)).To(Succeed())
			health := map[string]workv1alpha1.ResourceHealth{}
			for _, item := range rb.Status.AggregatedStatus {
				health[item.ClusterName] = item.Health
			}
			g.Expect(health).To(Equal(map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceHealthy}))
			hubShop := &unstructured.Unstructured{}
			hubShop.SetGroupVersionKind(workloadGVK)
			g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "interp", Name: "shop"}, hubShop)).To(Succeed())
			n, _, _ := unstructured.NestedInt64(hubShop.Object, "status", "readyReplicas")
			g.Expect(n).To(Equal(int64(3)), "status of the hub's Workload: %v", hubShop.Object["status"])
		}).WithTimeout(timeUnit).Should(Succeed())
	}, SpecTimeout(6*time.Minute))

	It("leaves a replica count a member's autoscaler owns to the member: no ApplyFailed, the template's other changes still applied", func(ctx SpecContext) {
		m1 := theFleet.Member("member1")
		readyMember(ctx, m1)
		readyMember(ctx, theFleet.Member("member2"))
		federatedNamespace(ctx, "autoscaled")
		Expect(theFleet.Apply(ctx, []byte(strings.ReplaceAll(labTemplate+"---"+labWeighted, "namespace: lab", "namespace: autoscaled")))).To(Succeed())
		eventually(ctx, readyReplicas(ctx, m1, "autoscaled", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("4/4"))

		By("member1's autoscaler scales its copy to 5 through the scale subresource")
		d := memberDeployment(ctx, m1, "autoscaled", "fleet-web")
		Expect(d).NotTo(BeNil())
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: "autoscaled", Name: "fleet-web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
		Expect(m1.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler"))).To(Succeed())
		eventually(ctx, readyReplicas(ctx, m1, "autoscaled", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("5/5"))

		By("a template change reaches member1 and its 5 replicas stay")
		Expect(theFleet.Apply(ctx, []byte(strings.ReplaceAll(strings.ReplaceAll(labTemplate, "namespace: lab", "namespace: autoscaled"),
			"value: shared", "value: autoscaled")))).To(Succeed())
		eventually(ctx, envValue(ctx, m1, "autoscaled", "fleet-web")).WithTimeout(timeUnit).Should(Equal("autoscaled"))
		Consistently(ctx, func() int32 {
			if d := memberDeployment(ctx, m1, "autoscaled", "fleet-web"); d != nil {
				return *d.Spec.Replicas
			}
			return -1
		}).WithTimeout(15*time.Second).WithPolling(time.Second).Should(Equal(int32(5)), "member1's spec.replicas")
		eventually(ctx, readyReplicas(ctx, m1, "autoscaled", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("5/5"))

		By("no ApplyFailed event on the template for the count, and its Work applied, saying whose the count is")
		// Only a failure over the count is this spec's business: a member
		// apiserver timing out on a loaded machine is reported as
		// ApplyFailed too, and rightly.
		events := &corev1.EventList{}
		Expect(theFleet.Hub.Client.List(ctx, events, client.InNamespace("autoscaled"))).To(Succeed())
		for _, e := range events.Items {
			if e.Reason != "ApplyFailed" {
				continue
			}
			Expect(e.Message).NotTo(Or(ContainSubstring("conflict"), ContainSubstring("replicas")), "event %s: %s", e.Name, e.Message)
			GinkgoWriter.Printf("ApplyFailed event %s, not over the count: %s\n", e.Name, e.Message)
		}
		eventually(ctx, func(g Gomega) {
			rb := &workv1alpha1.ResourceBinding{}
			g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "autoscaled", Name: "fleet-web-deployment"}, rb)).To(Succeed())
			found := false
			for _, item := range rb.Status.AggregatedStatus {
				if item.ClusterName == "member1" {
					found = true
					g.Expect(item.Applied).To(BeTrue(), "member1: %s", item.AppliedMessage)
				}
			}
			g.Expect(found).To(BeTrue())
			works := &workv1alpha1.WorkList{}
			g.Expect(theFleet.Hub.Client.List(ctx, works, client.InNamespace("flotilla-es-member1"))).To(Succeed())
			messages := ""
			for _, w := range works.Items {
				for _, st := range w.Status.ManifestStatuses {
					if st.Identifier.Namespace == "autoscaled" && st.Identifier.Kind == "Deployment" {
						messages += st.Message
					}
				}
			}
			g.Expect(messages).To(ContainSubstring(fmt.Sprintf("spec.replicas kept as the member's: owned there by %s", "horizontal-pod-autoscaler")))
		}).WithTimeout(timeUnit).Should(Succeed())
	}, SpecTimeout(6*time.Minute))
})

// stuckOnMember2 runs on member2 first (the first affinity term), member1
// otherwise; an override keeps its Pods Pending on member2 (a node
// selector no node matches), so that its copy there never becomes ready.
const stuckOnMember2 = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: appfailover}
spec:
  replicas: 2
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      containers:
      - {name: web, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 100m}}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: stuck, namespace: appfailover}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: stuck}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      plaintext:
      - {path: /spec/template/spec/nodeSelector, operator: add, value: {e2e.flotilla.io/no-such-node: "true"}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: stuck, namespace: appfailover}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: stuck}]
  placement:
    clusterAffinities:
    - {affinityName: primary, clusterNames: [member2]}
    - {affinityName: backup, clusterNames: [member1]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
  failover:
    application:
      decisionConditions: {tolerationSeconds: 15}
      purgeMode: Never
      statePreservation:
        rules:
        - {aliasLabelName: failover.example.io/replicas-before, jsonPath: "{ .replicas }"}
`

var _ = Describe("Application failover", func() {
	It("moves a Deployment whose Pods never become ready on member2 to member1 after tolerationSeconds, with its preserved state as labels there, keeping member2's copy until released (purgeMode Never)", func(ctx SpecContext) {
		m1, m2 := theFleet.Member("member1"), theFleet.Member("member2")
		readyMember(ctx, m1)
		readyMember(ctx, m2)
		federatedNamespace(ctx, "appfailover")
		Expect(theFleet.Apply(ctx, []byte(stuckOnMember2))).To(Succeed())

		By("placed on member2, where its Pods stay Pending: Unhealthy on the binding")
		rb := &workv1alpha1.ResourceBinding{}
		key := client.ObjectKey{Namespace: "appfailover", Name: "stuck-deployment"}
		var unhealthySince time.Time
		eventually(ctx, func(g Gomega) {
			g.Expect(theFleet.Hub.Client.Get(ctx, key, rb)).To(Succeed())
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(1))
			item := rb.Status.AggregatedStatus[0]
			g.Expect(item.ClusterName).To(Equal("member2"))
			g.Expect(item.Health).To(Equal(workv1alpha1.ResourceUnhealthy), "%+v", item)
			unhealthySince = item.HealthTransitionTime.Time
		}).WithTimeout(2 * timeUnit).Should(Succeed())
		Expect(readyReplicas(ctx, m2, "appfailover", "stuck")()).To(Equal("0/2"))

		By("evicted from member2 after tolerationSeconds: the task says why, and member1 gets a copy")
		// purgeMode Never keeps the task (and member2's copy) until an
		// operator releases it, so both can be seen without a race: on this
		// fleet the replacement is Ready within a second, and a Gracefully
		// task goes as soon as it is.
		var task workv1alpha1.GracefulEvictionTask
		eventually(ctx, func(g Gomega) {
			g.Expect(theFleet.Hub.Client.Get(ctx, key, rb)).To(Succeed())
			g.Expect(rb.Spec.GracefulEvictionTasks).To(HaveLen(1))
			task = rb.Spec.GracefulEvictionTasks[0]
			g.Expect(memberDeployment(ctx, m1, "appfailover", "stuck")).NotTo(BeNil())
		}).WithTimeout(2*timeUnit).Should(Succeed(), func() string {
			return bindingAndWorks(ctx, "appfailover", "stuck-deployment") + "\n" + memberTaints(ctx)
		})
		Expect(task.FromCluster).To(Equal("member2"))
		Expect(task.Reason).To(Equal(workv1alpha1.EvictionReasonApplicationFailure))
		Expect(task.PurgeMode).To(Equal(policyv1alpha1.Never))
		Expect(task.PreservedLabelState).To(HaveKeyWithValue("failover.example.io/replicas-before", "2"))
		eventually(ctx, func(g Gomega) {
			d := memberDeployment(ctx, m1, "appfailover", "stuck")
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Labels).To(HaveKeyWithValue("failover.example.io/replicas-before", "2"), "the preserved state on member1's copy")
		}).WithTimeout(timeUnit).Should(Succeed())
		Expect(task.CreationTimestamp.Time.Sub(unhealthySince)).To(BeNumerically(">=", 14*time.Second), "evicted before tolerationSeconds")
		eventually(ctx, readyReplicas(ctx, m1, "appfailover", "stuck")).WithTimeout(timeUnit).Should(Equal("2/2"))
		Expect(readyReplicas(ctx, m2, "appfailover", "stuck")()).To(Equal("0/2"), "member2's copy kept under purgeMode Never")
		evicted := &corev1.EventList{}
		Expect(theFleet.Hub.Client.List(ctx, evicted, client.InNamespace("appfailover"))).To(Succeed())
		found := false
		for _, e := range evicted.Items {
			found = found || (e.Reason == workv1alpha1.EvictedEvent && strings.Contains(e.Message, "ApplicationFailure"))
		}
		Expect(found).To(BeTrue(), "an Evicted event saying ApplicationFailure")

		By("an operator releases the task (suppressDeletion false): member2's copy goes")
		eventually(ctx, func() error {
			if err := theFleet.Hub.Client.Get(ctx, key, rb); err != nil {
				return err
			}
			for i := range rb.Spec.GracefulEvictionTasks {
				rb.Spec.GracefulEvictionTasks[i].SuppressDeletion = ptr.To(false)
			}
			return theFleet.Hub.Client.Update(ctx, rb)
		}).WithTimeout(timeUnit).Should(Succeed())
		eventually(ctx, readyReplicas(ctx, m2, "appfailover", "stuck")).WithTimeout(timeUnit).Should(Equal("absent"))
	}, SpecTimeout(6*time.Minute))
})
