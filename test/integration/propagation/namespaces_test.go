package propagation_test

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/federatednamespace"
)

// TestAFederatedNamespaceRefusesExternalIPs: a Service that would make the
// hub's nodes answer for external addresses is refused in a federated
// namespace, on create and on update; a plain ClusterIP Service is a template.
func TestAFederatedNamespaceRefusesExternalIPs(t *testing.T) {
	const ns = "external-ips"
	namespace(t, ns, true)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"203.0.113.7"}},
	}
	const denial = "namespace external-ips is federated (flotilla.io/federated=true): its templates run in member clusters, never on the hub; a Service with spec.externalIPs (203.0.113.7) would make the hub's nodes answer for those addresses"
	err := hub.Client.Create(ctx(), svc.DeepCopy())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), denial) {
		t.Fatalf("create a Service with externalIPs: %v, want Forbidden containing %q", err, denial)
	}
	plain := svc.DeepCopy()
	plain.Spec.ExternalIPs = nil
	create(t, plain)
	err = hub.Client.Update(ctx(), func() *corev1.Service {
		s := plain.DeepCopy()
		s.Spec.ExternalIPs = []string{"203.0.113.7"}
		return s
	}())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), denial) {
		t.Fatalf("add externalIPs to a Service: %v, want Forbidden containing %q", err, denial)
	}
}

// TestReservedNamespacesCannotBeFederated: labelling kube-system,
// kube-public, kube-node-lease, flotilla-system or an execution namespace
// federated is refused, by create or update, with the namespace and why;
// default is admitted with a warning, and removing the label is admitted.
func TestReservedNamespacesCannotBeFederated(t *testing.T) {
	for _, name := range []string{"flotilla-system", "kube-tenant"} {
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{policyv1alpha1.FederatedLabel: "true"}}}
			err := hub.Client.Create(ctx(), ns)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace "+name+" cannot be federated") {
				t.Errorf("create %s labelled federated: %v, want Forbidden naming it", name, err)
			}
		}
	}
	if err := hub.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for name, why := range map[string]string{
		"kube-system":         "it holds the management cluster's own components",
		"kube-public":         "it holds the management cluster's own components",
		"kube-node-lease":     "it holds the management cluster's own components",
		"flotilla-system":     "Flotilla itself runs there",
		"flotilla-es-member1": "flotilla-es-* namespaces hold members' Works",
	} {
		t.Run(name, func(t *testing.T) {
			ns := &corev1.Namespace{}
			if err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, ns); err != nil {
				t.Fatal(err)
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[policyv1alpha1.FederatedLabel] = "true"
			err := hub.Client.Update(ctx(), ns)
			want := "namespace " + name + " cannot be federated (flotilla.io/federated=true): " + why
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("label %s federated: %v, want Forbidden containing %q", name, err, want)
			}
		})
	}

	// default: admitted, with the warning.
	warnings := &recordedWarnings{}
	cfg := rest.CopyConfig(hub.Config)
	cfg.WarningHandler = warnings
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	def := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	update(t, c, def, func(ns *corev1.Namespace) {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[policyv1alpha1.FederatedLabel] = "true"
	})
	t.Cleanup(func() {
		update(t, hub.Client, def, func(ns *corev1.Namespace) { delete(ns.Labels, policyv1alpha1.FederatedLabel) })
		_ = hub.Client.Delete(ctx(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: federatednamespace.QuotaName}})
	})
	if got := warnings.all(); !strings.Contains(got, "namespace default is federated: from now on it admits no Pods") {
		t.Errorf("warnings %q, want the default namespace's", got)
	}
}

type recordedWarnings struct {
	mu   sync.Mutex
	text []string
}

func (w *recordedWarnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *recordedWarnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.text, "\n")
}
