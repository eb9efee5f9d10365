package propagation_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/controllers/federatednamespace"
)

// TestAFederatedNamespaceIsKeptInert: the inert quota appears, refuses
// Pods, and comes back when deleted or edited.
func TestAFederatedNamespaceIsKeptInert(t *testing.T) {
	const ns = "inert"
	namespace(t, ns, true)
	key := client.ObjectKey{Namespace: ns, Name: federatednamespace.QuotaName}
	want := corev1.ResourceList{
		"pods": resource.MustParse("0"), "persistentvolumeclaims": resource.MustParse("0"),
		"services.loadbalancers": resource.MustParse("0"), "services.nodeports": resource.MustParse("0"),
	}
	inert := func() error {
		q := &corev1.ResourceQuota{}
		if err := hub.Client.Get(ctx(), key, q); err != nil {
			return err
		}
		// status.hard is what quota admission enforces.
		if !apiequality.Semantic.DeepEqual(q.Spec, corev1.ResourceQuotaSpec{Hard: want}) || !apiequality.Semantic.DeepEqual(q.Status.Hard, want) {
			return fmt.Errorf("quota spec %s status %s", rawJSON(q.Spec), rawJSON(q.Status))
		}
		return nil
	}
	eventually(t, "the inert quota", inert)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "runs"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if err := hub.Client.Create(ctx(), pod); !apierrors.IsForbidden(err) {
		t.Errorf("creating a Pod in a federated namespace: %v, want Forbidden by the quota", err)
	}

	if err := hub.Client.Delete(ctx(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: federatednamespace.QuotaName}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the inert quota re-created", inert)

	update(t, hub.Client, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: federatednamespace.QuotaName}}, func(q *corev1.ResourceQuota) {
		q.Spec.Hard["pods"] = resource.MustParse("10")
	})
	eventually(t, "the inert quota restored", inert)
	eventually(t, "an event saying so", func() error {
		return eventOn("", ns, federatednamespace.QuotaRestoredReason, "was edited and has been restored")
	})
}
