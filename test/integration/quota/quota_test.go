package quota_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestTheEnvelopePlacesUpToOverallAndAScaleDownLetsTheWaitingBindingPlace(t *testing.T) {
	fleet(t)
	ns := namespace(t, "envelope", true)
	q := frq(t, ns, "team", list("cpu", "64"))

	// Workloads totalling 60 CPU place.
	a := binding(t, ns, "a", 40, req("cpu", "1"))
	b := binding(t, ns, "b", 16, req("cpu", "1"))
	c := binding(t, ns, "c", 8, req("cpu", "500m"))
	for _, x := range []*workv1alpha1.ResourceBinding{a, b, c} {
		waitPlaced(t, x)
	}
	eventually(t, q, "overallUsed cpu=60 and Ready", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=60" && render(q.Status.Overall) == "cpu=64" && conditions.IsTrue(q, policyv1alpha1.QuotaConditionReady)
	}, describeQuota)

	// One more asking 8 CPU is refused with the quota, key, request and what is left.
	d := binding(t, ns, "d", 8, req("cpu", "1"))
	if got, want := waitRefused(t, d), "FederatedResourceQuota "+ns+"/team: cpu: requested 8, used 60 of 64, 4 left"; got != want {
		t.Errorf("QuotaExceeded message:\n got  %s\n want %s", got, want)
	}
	if d := waitRefusedBinding(t, d); len(d.Spec.Clusters) != 0 {
		t.Errorf("a refused binding was placed: %v", d.Spec.Clusters)
	}

	// Scaling a down by 4 CPU lets d place with no other action (the
	// scheduler's periodic retry is an hour away).
	scaled := time.Now()
	scale(t, a, 36)
	placed := waitPlaced(t, d)
	t.Logf("waiting binding placed %v after the scale-down was written", time.Since(scaled).Round(time.Millisecond))
	if n := placedReplicas(placed); n != 8 {
		t.Errorf("d placed %d replicas, want 8", n)
	}
	eventually(t, q, "overallUsed cpu=64", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "cpu=64"
	}, describeQuota)
}

func waitRefusedBinding(t *testing.T, b *workv1alpha1.ResourceBinding) *workv1alpha1.ResourceBinding {
	t.Helper()
	got := &workv1alpha1.ResourceBinding{}
	must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), got))
	return got
}

func TestLimitsCPUAndRequestsMemoryAreEnforcedLikeCPU(t *testing.T) {
	fleet(t)
	ns := namespace(t, "keys", true)
	q := frq(t, ns, "team", list("limits.cpu", "8", "requests.memory", "8Gi"))

	waitPlaced(t, binding(t, ns, "base", 3, req("cpu", "100m", "memory", "1Gi", "|", "cpu", "2"))) // limits.cpu 6, memory 3Gi
	if got, want := waitRefused(t, binding(t, ns, "limits", 2, req("cpu", "100m", "|", "cpu", "2"))),
		"FederatedResourceQuota "+ns+"/team: limits.cpu: requested 4, used 6 of 8, 2 left"; got != want {
		t.Errorf("limits.cpu:\n got  %s\n want %s", got, want)
	}
	if got, want := waitRefused(t, binding(t, ns, "memory", 3, req("memory", "2Gi"))),
		"FederatedResourceQuota "+ns+"/team: requests.memory: requested 6Gi, used 3Gi of 8Gi, 5Gi left"; got != want {
		t.Errorf("requests.memory:\n got  %s\n want %s", got, want)
	}
	waitPlaced(t, binding(t, ns, "fits", 1, req("cpu", "100m", "memory", "5Gi", "|", "cpu", "2")))
	eventually(t, q, "overallUsed limits.cpu=8 requests.memory=8Gi", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return render(q.Status.OverallUsed) == "limits.cpu=8 requests.memory=8Gi"
	}, describeQuota)
}

func TestTwentyBindingsAtOnceAgainstAQuotaForTenPlaceExactlyTen(t *testing.T) {
	fleet(t)
	for round := range 3 {
		ns := namespace(t, fmt.Sprintf("burst-%d", round), true)
		frq(t, ns, "team", list("cpu", "10"))
		var bindings []*workv1alpha1.ResourceBinding
		for i := range 20 {
			bindings = append(bindings, newBinding(ns, fmt.Sprintf("w%02d", i), 2, req("cpu", "500m")))
		}
		var wg sync.WaitGroup
		for _, b := range bindings {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := env.Client.Create(context.Background(), b); err != nil {
					t.Errorf("create %s: %v", b.Name, err)
				}
			}()
		}
		wg.Wait()
		t.Cleanup(func() {
			for _, b := range bindings {
				_ = env.Client.Delete(context.Background(), b)
			}
		})

		count := func() (placed, refused int, undecided []string) {
			for _, b := range bindings {
				got := &workv1alpha1.ResourceBinding{}
				must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), got))
				switch c := scheduledCondition(got); {
				case c == nil:
					undecided = append(undecided, got.Name)
				case c.Status == metav1.ConditionTrue:
					placed++
				case c.Reason == workv1alpha1.BindingReasonQuotaExceeded:
					refused++
				default:
					t.Fatalf("round %d: %s: %+v", round, got.Name, c)
				}
			}
			return placed, refused, undecided
		}
		deadline := time.Now().Add(timeout)
		for {
			placed, refused, undecided := count()
			if len(undecided) == 0 {
				if placed != 10 || refused != 10 {
					t.Fatalf("round %d: %d placed and %d refused, want exactly 10 and 10", round, placed, refused)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: undecided after %v: %v", round, timeout, undecided)
			}
			time.Sleep(200 * time.Millisecond)
		}
		// And it stays so.
		time.Sleep(2 * time.Second)
		if placed, refused, _ := count(); placed != 10 || refused != 10 {
			t.Fatalf("round %d: later %d placed and %d refused", round, placed, refused)
		}
	}
}

func TestWaitingBindingsAreRetriedOldestFirst(t *testing.T) {
	fleet(t)
	ns := namespace(t, "order", true)
	frq(t, ns, "team", list("cpu", "4"))
	running := binding(t, ns, "running", 4, req("cpu", "1"))
	waitPlaced(t, running)

	// Names sort the other way round from age: the order is by age.
	old := binding(t, ns, "z-old", 4, req("cpu", "1"))
	waitRefused(t, old)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a resolution of one second
	young := binding(t, ns, "a-young", 4, req("cpu", "1"))
	waitRefused(t, young)

	// 4 CPU free up: only the older fits, and gets them.
	must(t, env.Client.Delete(context.Background(), running))
	waitPlaced(t, old)
	if msg := waitRefused(t, young); msg != "FederatedResourceQuota "+ns+"/team: cpu: requested 4, used 4 of 4, 0 left" {
		t.Errorf("the younger binding: %s", msg)
	}
	// The quota grows: the younger places too.
	q := &policyv1alpha1.FederatedResourceQuota{}
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "team"}, q))
	before := q.DeepCopy()
	q.Spec.Overall = list("cpu", "8")
	must(t, env.Client.Patch(context.Background(), q, client.MergeFrom(before)))
	waitPlaced(t, young)
}

func TestAQuotaInANamespaceThatIsNotFederatedSaysTheOneStepToTake(t *testing.T) {
	fleet(t)
	ns := namespace(t, "plain", false)
	q := frq(t, ns, "team", list("cpu", "4"))
	want := "namespace " + ns + " is not federated, so it holds no templates and the quota is not in force; federate it: kubectl label namespace " + ns + " flotilla.io/federated=true"
	eventually(t, q, "Ready=False/NamespaceNotFederated", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		c := conditions.Get(q, policyv1alpha1.QuotaConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == policyv1alpha1.QuotaReasonNamespaceNotFederated && c.Message == want
	}, describeQuota)
	if len(q.Status.Overall) != 0 {
		t.Errorf("status.overall %s on a quota not in force", render(q.Status.Overall))
	}
	waitEvent(t, ns, "team", policyv1alpha1.QuotaReasonNamespaceNotFederated, want)

	// Labelling the namespace puts it in force.
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(nsGVK)
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, obj))
	before := obj.DeepCopy()
	obj.SetLabels(map[string]string{policyv1alpha1.FederatedLabel: "true"})
	must(t, env.Client.Patch(context.Background(), obj, client.MergeFrom(before)))
	eventually(t, q, "Ready=True", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		return conditions.IsTrue(q, policyv1alpha1.QuotaConditionReady) && render(q.Status.Overall) == "cpu=4" && render(q.Status.OverallUsed) == "cpu=0"
	}, describeQuota)
}

func TestStorageAndServiceKeysAreInForceLikeEveryOther(t *testing.T) {
	fleet(t)
	ns := namespace(t, "storage", true)
	q := frq(t, ns, "team", list("cpu", "4", "requests.storage", "1Ti", "services.loadbalancers", "2"))
	// Envelope contents are counted as rendered (PVCs, Services of type
	// LoadBalancer), so these keys are used up like cpu; nothing uses them yet.
	eventually(t, q, "Ready=True, every key in force", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		c := conditions.Get(q, policyv1alpha1.QuotaConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && !strings.Contains(c.Message, "not accounted") &&
			render(q.Status.OverallUsed) == "cpu=0 requests.storage=0 services.loadbalancers=0"
	}, describeQuota)
}
