package quota_test

import (
	"context"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warnings collects the warnings the apiserver returns, as kubectl prints them.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, message)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	return out
}

// warningClient is a client whose requests' warnings are collected.
func warningClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	must(t, err)
	return c, w
}

func deployment(ns, name string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: list("cpu", cpu)},
				}}},
			},
		},
	}
}

const admittedNote = "; the workload is admitted, but its binding will not be placed past the quota (Scheduled=False, reason QuotaExceeded) until quota frees"

func expectWarnings(t *testing.T, w *warnings, action string, want ...string) {
	t.Helper()
	got := w.take()
	if len(got) != len(want) {
		t.Fatalf("%s: warnings %q, want %q", action, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: warning\n got  %s\n want %s", action, got[i], want[i])
		}
	}
}

func TestApplyingOrScalingPastTheQuotaWarnsButAdmits(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	c, w := warningClient(t)
	ns := namespace(t, "warn", true)
	frq(t, ns, "team", list("cpu", "4"))
	waitScope(t, ns, true)
	running := binding(t, ns, "running", 3, req("cpu", "1"))
	waitPlaced(t, running)

	web := deployment(ns, "web", 2, "1")
	must(t, c.Create(ctx, web)) // admitted, not denied
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), web) })
	expectWarnings(t, w, "apply 2 × 1 CPU", "FederatedResourceQuota "+ns+"/team: cpu: requested 2, used 3 of 4, 1 left"+admittedNote)

	scaleTo := func(n int32) {
		t.Helper()
		must(t, c.SubResource("scale").Update(ctx, web, client.WithSubResourceBody(&autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Namespace: web.Namespace, Name: web.Name},
			Spec:       autoscalingv1.ScaleSpec{Replicas: n},
		})))
	}
	scaleTo(3)
	expectWarnings(t, w, "kubectl scale --replicas=3", "FederatedResourceQuota "+ns+"/team: cpu: requested 3, used 3 of 4, 1 left"+admittedNote)
	scaleTo(1)
	expectWarnings(t, w, "kubectl scale --replicas=1")

	// A change that touches neither replicas nor requirements says nothing.
	must(t, c.Get(ctx, client.ObjectKeyFromObject(web), web))
	web.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
	must(t, c.Update(ctx, web))
	expectWarnings(t, w, "new image")

	// The running workload scaling up past the quota: its binding's own use counts as its own.
	runningTemplate := deployment(ns, "running", 3, "1")
	must(t, c.Create(ctx, runningTemplate))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), runningTemplate) })
	expectWarnings(t, w, "the running template as it is placed")
	runningTemplate.Spec.Replicas = ptr.To[int32](6)
	must(t, c.Update(ctx, runningTemplate))
	expectWarnings(t, w, "scale the running template to 6", "FederatedResourceQuota "+ns+"/team: cpu: requested 3, used 3 of 4, 1 left"+admittedNote)
}

func TestNamespacesThatAreNotFederatedGetNoQuotaWarnings(t *testing.T) {
	ctx := context.Background()
	c, w := warningClient(t)
	ns := namespace(t, "nowarn", false)
	frq(t, ns, "team", list("cpu", "0"))
	waitScope(t, ns, true) // the webhook would be called, were the namespace federated
	d := deployment(ns, "web", 5, "1")
	must(t, c.Create(ctx, d))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), d) })
	expectWarnings(t, w, "apply in a namespace that is not federated")
}
