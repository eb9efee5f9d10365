package propagation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/test/testenv"
)

// TestTemplateBatching runs the detector alone against a hub of its own (the
// suite's manager would claim the templates at once): templates no policy
// has claimed yet wait while others keep arriving, up to a bound.
func TestTemplateBatching(t *testing.T) {
	own, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	c := own.Client
	for _, ns := range []string{"burst", "stream"} {
		if err := c.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{policyv1alpha1.FederatedLabel: "true"}}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx(), &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
	bindings := func(ns string) int {
		list := &workv1alpha1.ResourceBindingList{}
		if err := c.List(ctx(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	configMap := func(ns string, i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm%02d", i)}}
	}
	// claimed waits until ns holds want bindings.
	claimed := func(t *testing.T, ns string, want int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for bindings(ns) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d templates of %s have a binding after %s", bindings(ns), want, ns, within)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// running waits until the detector claims a first template of ns: it
	// watches ConfigMaps from then on.
	running := func(t *testing.T, ns string, quiet time.Duration) {
		t.Helper()
		probe := configMap(ns, 99)
		if err := c.Create(ctx(), probe); err != nil {
			t.Fatal(err)
		}
		claimed(t, ns, 1, waitTimeout+quiet)
	}

	t.Run("a burst is claimed once it ends", func(t *testing.T) {
		// A quiet period far above one create's time: every template of
		// the burst arrives within it of the one before.
		quiet := 3 * time.Second
		stop := startDetector(t, own, &detector.Batching{QuietPeriod: quiet, MaxWait: time.Minute})
		defer stop()
		running(t, "burst", quiet)
		// 50 templates 50 ms apart: without batching the first ones
		// would be claimed long before the last arrives.
		const n = 50
		var longest time.Duration
		last := time.Now()
		for i := range n {
			if err := c.Create(ctx(), configMap("burst", i)); err != nil {
				t.Fatal(err)
			}
			longest = max(longest, time.Since(last))
			last = time.Now()
			time.Sleep(50 * time.Millisecond)
		}
		if got := bindings("burst") - 1; got != 0 {
			t.Fatalf("%d of %d templates were claimed while the burst arrived (the longest gap between two creations %s, quiet period %s)", got, n, longest, quiet)
		}
		claimed(t, "burst", n+1, waitTimeout+quiet)
	})

	t.Run("a stream holds each template no longer than the bound", func(t *testing.T) {
		maxWait := 2 * time.Second
		quiet := time.Second
		stop := startDetector(t, own, &detector.Batching{QuietPeriod: quiet, MaxWait: maxWait})
		defer stop()
		running(t, "stream", quiet)
		// A template every 200 ms, each within the quiet period of the
		// one before: without the bound none would be claimed before the
		// stream ends.
		start := time.Now()
		for i := 0; ; i++ {
			if err := c.Create(ctx(), configMap("stream", i)); err != nil {
				t.Fatal(err)
			}
			if bindings("stream") > 1 {
				took := time.Since(start)
				t.Logf("the first binding came %s into a stream of a template every 200 ms (bound %s)", took.Round(time.Millisecond), maxWait)
				if took < quiet {
					t.Fatalf("a template of the stream was claimed %s after the first arrived, within the quiet period %s", took, quiet)
				}
				return
			}
			if time.Since(start) > maxWait+waitTimeout {
				t.Fatalf("no template claimed %s into the stream, though each waits %s at most", time.Since(start).Round(time.Millisecond), maxWait)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// startDetector runs the detector alone, with batching, on own's hub until
// the returned stop is called.
func startDetector(t *testing.T, own *testenv.Env, batching *detector.Batching) (stop func()) {
	t.Helper()
	return own.StartManager(t, func(mgr ctrl.Manager) error {
		d := &detector.Detector{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), RESTMapper: mgr.GetRESTMapper(),
			Recorder: mgr.GetEventRecorder("flotilla-detector"), Batching: batching,
		}
		return d.SetupWithManager(context.Background(), mgr, controller.TypedOptions[detector.TemplateKey]{})
	})
}
