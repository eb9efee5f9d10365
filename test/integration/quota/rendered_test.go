package quota_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	bindingcontroller "github.com/flotilla-io/flotilla/controllers/binding"
)

// duplicated places a full copy on each of the named members.
func duplicated(members ...string) *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: members},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
	}
}

// deploymentYAML is a Deployment of replicas × cpu requests, as an
// envelope carries it.
func deploymentYAML(ns, name string, replicas int, cpu string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - {name: app, image: app, resources: {requests: {cpu: "%s"}}}
`, name, ns, replicas, name, name, cpu)
}

// envelopeBinding writes an envelope ConfigMap carrying manifest and the
// binding the detector would write for it, placed on members; both deleted
// after the test.
func envelopeBinding(t *testing.T, ns, name, manifest string, members ...string) *workv1alpha1.ResourceBinding {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{policyv1alpha1.EnvelopeLabel: "true"}},
		Data:       map[string]string{"workload.yaml": manifest},
	}
	must(t, env.Client.Create(context.Background(), cm))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-configmap"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:  workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, UID: cm.UID},
			Placement: duplicated(members...),
		},
	}
	must(t, env.Client.Create(context.Background(), b))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	return b
}

func renderedCondition(b *workv1alpha1.ResourceBinding) *metav1.Condition {
	return conditions.Get(b, workv1alpha1.ConditionRendered)
}

func describeRendering(b *workv1alpha1.ResourceBinding) string {
	return fmt.Sprintf("clusters %v, Rendered %+v, renderedUsage %s", b.Spec.Clusters, renderedCondition(b), render(b.Status.RenderedUsage))
}

// waitRendered waits for the Rendered condition with status and reason, and returns its message.
func waitRendered(t *testing.T, b *workv1alpha1.ResourceBinding, status metav1.ConditionStatus, reason string) string {
	t.Helper()
	got := eventually(t, b, "Rendered="+string(status)+"/"+reason, func(b *workv1alpha1.ResourceBinding) bool {
		c := renderedCondition(b)
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == b.Generation
	}, describeRendering)
	return renderedCondition(got).Message
}

// work reads the binding's Work on member; nil when there is none.
func work(t *testing.T, b *workv1alpha1.ResourceBinding, member string) *workv1alpha1.Work {
	t.Helper()
	w := &workv1alpha1.Work{}
	err := env.Client.Get(context.Background(), client.ObjectKey{
		Namespace: clusterv1alpha1.ExecutionNamespace(member),
		Name:      bindingcontroller.WorkName(bindingcontroller.KindResourceBinding, b.Namespace, b.Name),
	}, w)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return w
}

// waitWork waits for the binding's Work on member to carry want (a substring of its manifests).
func waitWork(t *testing.T, b *workv1alpha1.ResourceBinding, member, want string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w := work(t, b, member)
		var have []string
		if w != nil {
			for _, m := range w.Spec.Workload.Manifests {
				have = append(have, string(m.Raw))
			}
		}
		if strings.Contains(strings.Join(have, "\n"), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Work of %s/%s on %s: want manifests with %s; have %q", b.Namespace, b.Name, member, want, have)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitTemplateEvent waits for a Warning event on a template whose note contains note.
func waitTemplateEvent(t *testing.T, ns, kind, name, reason, note string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []string
	for time.Now().Before(deadline) {
		list := &eventsv1.EventList{}
		must(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
		seen = nil
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, note) && e.Type == corev1.EventTypeWarning {
				return
			}
			seen = append(seen, e.Regarding.Kind+" "+e.Regarding.Name+" "+e.Reason+": "+e.Note)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no Warning event %s %q on %s %s/%s; seen %q", reason, note, kind, ns, name, seen)
}

func TestAnEnvelopeCarryingMoreThanTheQuotaIsRefusedAndNothingOfItReachesTheMember(t *testing.T) {
	fleet(t)
	ns := namespace(t, "envelope-over", true)
	q := frq(t, ns, "team", list("cpu", "10", "pods", "20"))
	b := envelopeBinding(t, ns, "big", deploymentYAML(ns, "big", 50, "4"), "m1")
	waitPlaced(t, b)
	msg := waitRendered(t, b, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded)
	want := fmt.Sprintf("member m1: FederatedResourceQuota %[1]s/team: cpu: requested 200, used 0 of 10, 10 left; "+
		"FederatedResourceQuota %[1]s/team: pods: requested 50, used 0 of 20, 20 left; carried by envelope ConfigMap %[1]s/big; "+
		"its Work is not written (one it has stays as it is) until quota frees", ns)
	if msg != want {
		t.Errorf("Rendered message\n have %q\n want %q", msg, want)
	}
	if w := work(t, b, "m1"); w != nil {
		t.Errorf("a Work was written for m1: %d manifests", len(w.Spec.Workload.Manifests))
	}
	waitTemplateEvent(t, ns, "ConfigMap", "big", workv1alpha1.BindingReasonQuotaExceeded, "cpu: requested 200, used 0 of 10, 10 left")
	eventually(t, q, "overallUsed cpu=0 pods=0", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=0 pods=0"
	}, describeQuota)
}

func TestAnOverrideRaisingOneMembersRequestsPastTheQuotaRefusesThatMemberOnly(t *testing.T) {
	fleet(t)
	ns := namespace(t, "override-over", true)
	q := frq(t, ns, "team", list("cpu", "4"))
	ctx := context.Background()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app",
					Resources: corev1.ResourceRequirements{Requests: list("cpu", "1")}}}},
			},
		},
	}
	must(t, env.Client.Create(ctx, d))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, d) })
	op := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bigger"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
					Path: "/spec/template/spec/containers/0/resources/requests/cpu", Operator: policyv1alpha1.OverriderOpReplace,
					Value: apiextensionsv1.JSON{Raw: []byte(`"8"`)},
				}}},
			}},
		},
	}
	must(t, env.Client.Create(ctx, op))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, op) })
	b := newBinding(ns, "web", 1, req("cpu", "1"))
	b.Spec.Placement = duplicated("m1", "m2")
	must(t, env.Client.Create(ctx, b))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, b) })

	waitPlaced(t, b)
	msg := waitRendered(t, b, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded)
	// The scheduler charged 2 × 1 CPU; m2's Work would add 7 more.
	want := fmt.Sprintf("member m2: FederatedResourceQuota %[1]s/team: cpu: requested 7, used 2 of 4, 2 left; "+
		"raised by OverridePolicy %[1]s/bigger rule 0; its Work is not written (one it has stays as it is) until quota frees", ns)
	if msg != want {
		t.Errorf("Rendered message\n have %q\n want %q", msg, want)
	}
	waitWork(t, b, "m1", `"cpu":"1"`)
	if w := work(t, b, "m2"); w != nil {
		t.Errorf("a Work was written for m2")
	}
	waitTemplateEvent(t, ns, "Deployment", "web", workv1alpha1.BindingReasonQuotaExceeded, "raised by OverridePolicy "+ns+"/bigger rule 0")
	eventually(t, q, "overallUsed cpu=2", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=2"
	}, describeQuota)

	// An override within quota for m2 is admitted; the quota shows what is rendered.
	cur := &policyv1alpha1.OverridePolicy{}
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(op), cur))
	cur.Spec.OverrideRules[0].Overriders.Plaintext[0].Value = apiextensionsv1.JSON{Raw: []byte(`"3"`)}
	must(t, env.Client.Update(ctx, cur))
	waitRendered(t, b, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered)
	waitWork(t, b, "m2", `"cpu":"3"`)
	eventually(t, q, "overallUsed cpu=4 (m1's 1 and m2's 3)", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=4"
	}, describeQuota)
	eventually(t, b, "renderedUsage recorded", func(b *workv1alpha1.ResourceBinding) bool {
		return render(b.Status.RenderedUsage) == "count/deployments.apps=1 cpu=4 pods=2 requests.cpu=4"
	}, describeRendering)
}

func TestAnEnvelopeWithinQuotaIsCountedAsRenderedAndFreeingQuotaLetsAWaitingOneRender(t *testing.T) {
	fleet(t)
	ns := namespace(t, "envelope-within", true)
	q := frq(t, ns, "team", list("cpu", "4", "pods", "10"))
	small := envelopeBinding(t, ns, "small", deploymentYAML(ns, "small", 3, "1"), "m1")
	waitRendered(t, small, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered)
	waitWork(t, small, "m1", `"replicas":3`)
	eventually(t, q, "overallUsed cpu=3 pods=3: the envelope's contents", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=3 pods=3"
	}, describeQuota)

	more := envelopeBinding(t, ns, "more", deploymentYAML(ns, "more", 2, "1"), "m1")
	msg := waitRendered(t, more, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded)
	if want := "cpu: requested 2, used 3 of 4, 1 left"; !strings.Contains(msg, want) {
		t.Errorf("Rendered message %q, want it to contain %q", msg, want)
	}
	if w := work(t, more, "m1"); w != nil {
		t.Errorf("a Work was written for the refused envelope")
	}

	must(t, env.Client.Delete(context.Background(), small))
	waitRendered(t, more, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered)
	waitWork(t, more, "m1", `"replicas":2`)
	eventually(t, q, "overallUsed cpu=2 pods=2", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=2 pods=2"
	}, describeQuota)
}
