package scheduling_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/cli"
)

// go test ./test/integration/scheduling/ -run Golden -update rewrites the
// golden files under testdata/ from what the CLI prints now.
var update = flag.Bool("update", false, "rewrite the CLI golden files in testdata/")

// golden compares got with testdata/name.golden.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("kubectl flotilla output differs from %s (-want +got; -update rewrites it):\n%s", path, diff)
	}
}

// decidedOver waits until the binding's decision covers exactly members:
// members of earlier tests are gone from the scheduler's view.
func decidedOver(t *testing.T, b *workv1alpha1.ResourceBinding, cond func(*workv1alpha1.ResourceBinding) bool, members ...string) {
	t.Helper()
	over := func(b *workv1alpha1.ResourceBinding) bool {
		d := b.Status.SchedulingDecision
		if d == nil || !cond(b) {
			return false
		}
		var names []string
		for _, m := range d.Members {
			names = append(names, m.Name)
		}
		slices.Sort(names)
		return slices.Equal(names, members)
	}
	got := waitFor(t, b, "a decision over "+strings.Join(members, ", "), over)
	if len(got.Spec.Clusters) == 0 {
		return
	}
	// The decision that placed it did not know it ran anywhere; a member
	// change has it decided again (any other member event would too, at a
	// moment of its own): the golden output is that of a decision that
	// knows where the binding runs — every selected member scored 100 for
	// locality.
	m := &clusterv1alpha1.MemberCluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: members[0]}, m); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Labels["flotilla.test/redecide"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := env.Client.Patch(context.Background(), m, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "a decision over "+strings.Join(members, ", ")+" that knows where it runs", func(b *workv1alpha1.ResourceBinding) bool {
		if !over(b) {
			return false
		}
		for _, row := range b.Status.SchedulingDecision.Members {
			if row.Selected && (len(row.Scores) == 0 || row.Scores[0] != 100) {
				return false
			}
		}
		return true
	})
}

// reportRunning lowers a member's free capacity by n replicas of 100m, as
// its estimator does once they run: the decision's AVAILABLE counts the
// replicas a member already holds for the binding as its own.
func reportRunning(t *testing.T, name string, n int64, freeCPU string) {
	t.Helper()
	m := &clusterv1alpha1.MemberCluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, m); err != nil {
		t.Fatal(err)
	}
	free := m.Status.CapacityModel.NodeGroups[0].Free
	pods := free[corev1.ResourcePods]
	pods.Sub(*resource.NewQuantity(n, resource.DecimalSI))
	free[corev1.ResourcePods] = pods
	free[corev1.ResourceCPU] = resource.MustParse(freeCPU)
	m.Status.CapacityModel.ObservedTime = metav1.NewTime(time.Now())
	if err := env.Client.Status().Update(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func clusterNames(names ...string) *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: names}}
}

func TestGoldenExplainOfADividedPlacement(t *testing.T) {
	member(t, "gold-a", "r7", "64", 1)
	member(t, "gold-b", "r7", "64", 1)
	b := binding(t, "gold-web", 3, staticWeights(map[string]int64{"gold-a": 2, "gold-b": 1}))
	// The decision after the placement was written (its generation), the
	// one that knows where the binding runs.
	decidedOver(t, b, func(b *workv1alpha1.ResourceBinding) bool {
		return placement(b) == "gold-a:2,gold-b:1" && b.Status.SchedulerObservedGeneration == b.Generation
	}, "gold-a", "gold-b")
	reportRunning(t, "gold-a", 2, "63800m")
	reportRunning(t, "gold-b", 1, "63900m")
	// What the status controller writes once members applied the Works.
	got := &workv1alpha1.ResourceBinding{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	got.Status.Conditions = append(got.Status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.BindingReasonFullyApplied, Message: "applied in 2 of 2 members", LastTransitionTime: metav1.Now()})
	got.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "gold-a", Applied: true, Health: workv1alpha1.ResourceHealthy},
		{ClusterName: "gold-b", Applied: true, Health: workv1alpha1.ResourceHealthy},
	}
	if err := env.Client.Status().Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	golden(t, "explain-divided", runCLI(t, "explain", "deployment/gold-web", "-n", "default"))
}

func TestGoldenExplainOfClusterNamesNamingNoMember(t *testing.T) {
	member(t, "member1", "r6", "64", 1)
	member(t, "member2", "r6", "64", 1)
	member(t, "member3", "r6", "64", 1)
	b := binding(t, "nosuch-web", 2, clusterNames("nosuch"))
	decidedOver(t, b, func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Status == metav1.ConditionFalse
	}, "member1", "member2", "member3")
	golden(t, "explain-unknown-member", runCLI(t, "explain", "deployment/nosuch-web", "-n", "default"))
}

func TestGoldenPreviewOfClusterNamesNamingNoMember(t *testing.T) {
	member(t, "member1", "r6", "64", 1)
	member(t, "member2", "r6", "64", 1)
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: preview-nosuch, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: preview-nosuch}}
  template:
    metadata: {labels: {app: preview-nosuch}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 100m}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: preview-nosuch, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: preview-nosuch}]
  placement:
    clusterAffinity: {clusterNames: [member2, nosuch]}
`
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	golden(t, "preview-unknown-member", runCLI(t, "preview", "-f", file))
}

func TestGoldenExplainShowsCapacityNowWhereItChangedSinceTheDecision(t *testing.T) {
	member(t, "cap-a", "r5", "64", 1)
	shrinking := member(t, "cap-b", "r5", "64", 1)
	b := binding(t, "cap-web", 2, &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated,
	}})
	decidedOver(t, b, func(b *workv1alpha1.ResourceBinding) bool { return placement(b) == "cap-a:2,cap-b:2" }, "cap-a", "cap-b")
	reportRunning(t, "cap-a", 2, "63800m")
	// Something else takes cap-b's CPU: 1 CPU is left, room for 10 more
	// replicas of 100m beside the 2 it runs. A placed binding is not
	// re-decided for a capacity report, so the decision keeps 110.
	reportRunning(t, shrinking.Name, 2, "1")
	golden(t, "explain-capacity-changed", runCLI(t, "explain", "deployment/cap-web", "-n", "default"))
}

func TestGoldenVersionReadsTheManagersDeployment(t *testing.T) {
	old := cli.Version
	cli.Version = "v0.0.0-client"
	t.Cleanup(func() { cli.Version = old })
	golden(t, "version-no-manager", runCLI(t, "version"))

	labels := map[string]string{"app.kubernetes.io/name": "flotilla-manager"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "flotilla-manager", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "manager", Image: "ghcr.io/flotilla-io/flotilla-manager:v0.3.0",
					Args: []string{"--leader-elect=true", "--flotilla-version=v0.3.1"},
				}}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), d) })
	golden(t, "version", runCLI(t, "version"))
}

func TestGoldenExplainNamesOverrideRulesForClustersThatAreNotMembers(t *testing.T) {
	member(t, "ov-a", "r4", "64", 1)
	template := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ov-web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ov-web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ov-web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), template); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), template) })
	op := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ov-web"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "ov-web"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{
				{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"ov-a"}},
					Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"tier": "a"}}}}},
				{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"ov-typo"}},
					Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"tier": "b"}}}}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), op) })
	b := binding(t, "ov-web", 1, clusterNames("ov-a"))
	decidedOver(t, b, func(b *workv1alpha1.ResourceBinding) bool { return placement(b) == "ov-a:1" }, "ov-a")
	reportRunning(t, "ov-a", 1, "63900m")
	golden(t, "explain-override-unknown-member", runCLI(t, "explain", "deployment/ov-web", "-n", "default"))
}

func TestAPlacementOnTheNamesThatExistStillSaysWhichDoNot(t *testing.T) {
	member(t, "known-a", "r3", "64", 1)
	b := binding(t, "known-web", 2, clusterNames("known-a", "nosuch"))
	want := "placed on known-a:2; clusterAffinity.clusterNames names nosuch, which is not a member of the fleet"
	waitFor(t, b, "Scheduled True: "+want, func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Status == metav1.ConditionTrue && c.Message == want
	})
}

// TestGoldenExplainSaysWhyABindingMoved: a binding application failover
// moved off a member shows the eviction task — member, reason, purge mode,
// when, why — and the state carried to the replacement.
func TestGoldenExplainSaysWhyABindingMoved(t *testing.T) {
	member(t, "moved-a", "r8", "64", 1)
	member(t, "moved-b", "r8", "64", 1)
	b := binding(t, "moved-web", 2, clusterNames("moved-a"))
	decidedOver(t, b, func(b *workv1alpha1.ResourceBinding) bool {
		return placement(b) == "moved-a:2" && b.Status.SchedulerObservedGeneration == b.Generation
	}, "moved-a", "moved-b")
	// What application failover wrote when it evicted the binding from
	// moved-b (the placement has since left it).
	got := &workv1alpha1.ResourceBinding{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(time.Date(2026, 12, 2, 10, 5, 0, 0, time.UTC))
	got.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{
		FromCluster: "moved-b", PurgeMode: policyv1alpha1.PurgeModeGracefully, Replicas: ptr.To[int32](2),
		Reason: workv1alpha1.EvictionReasonApplicationFailure, Producer: workv1alpha1.EvictionProducerApplicationFailover,
		Message:             "the workload has been Unhealthy on member moved-b since 2026-12-02T10:00:00Z, past decisionConditions.tolerationSeconds (5m0s)",
		PreservedLabelState: map[string]string{"failover.example.io/replicas-before": "2"},
		CreationTimestamp:   &at, ClustersBeforeFailover: []string{"moved-b"},
	}}
	if err := env.Client.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	decidedOver(t, got, func(b *workv1alpha1.ResourceBinding) bool {
		return placement(b) == "moved-a:2" && b.Status.SchedulerObservedGeneration == b.Generation
	}, "moved-a", "moved-b")
	golden(t, "explain-moved", runCLI(t, "explain", "deployment/moved-web", "-n", "default"))
}
