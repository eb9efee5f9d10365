package federatednamespace

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestFederatedIgnoresTheLabelWhereItCannotBe(t *testing.T) {
	labelled := map[string]string{"flotilla.io/federated": "true"}
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"shop", labelled, true},
		{"default", labelled, true},
		{"shop", nil, false},
		{"shop", map[string]string{"flotilla.io/federated": "false"}, false},
		{"kube-system", labelled, false},
		{"flotilla-system", labelled, false},
		{"flotilla-es-member1", labelled, false},
	}
	for _, tt := range tests {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Labels: tt.labels}}
		if got := Federated(ns); got != tt.want {
			t.Errorf("Federated(%s %v) = %t, want %t", tt.name, tt.labels, got, tt.want)
		}
	}
}

// The quota written by someone else during the reconcile (quota admission
// counting a new template, as in a burst) is looked at again, neither an
// error in the log nor a QuotaFailed Warning.
func TestAQuotaWrittenMeanwhileIsLookedAtAgain(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"flotilla.io/federated": "true"}}}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: QuotaName}, Spec: corev1.ResourceQuotaSpec{Hard: InertHard()}}
	base := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(ns, quota).WithStatusSubresource(quota).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return apierrors.NewConflict(corev1.Resource("resourcequotas"), QuotaName, errors.New("the object has been modified"))
		},
	})
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Recorder: recorder}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "shop"}})
	if err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("Reconcile = %+v, %v; want a requeue and no error", res, err)
	}
	select {
	case e := <-recorder.Events:
		t.Fatalf("event %q, want none", e)
	default:
	}
}
