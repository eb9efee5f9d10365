package webhooks

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestInertNamespaceAdmitsNothingThatRunsOrOpensTheHub(t *testing.T) {
	service := func(typ corev1.ServiceType) []byte {
		b, _ := json.Marshal(&corev1.Service{Spec: corev1.ServiceSpec{Type: typ}})
		return b
	}
	externalIPs := func(ips ...string) []byte {
		b, _ := json.Marshal(&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalIPs: ips}})
		return b
	}
	cases := []struct {
		name      string
		namespace string
		kind      string
		op        admissionv1.Operation
		sub       string
		object    []byte
		allowed   bool
	}{
		{name: "a Pod is denied", kind: "Pod", op: admissionv1.Create, object: []byte(`{}`)},
		{name: "a Pod's status update is allowed", kind: "Pod", op: admissionv1.Update, sub: "status", object: []byte(`{}`), allowed: true},
		{name: "a PersistentVolumeClaim is denied", kind: "PersistentVolumeClaim", op: admissionv1.Create, object: []byte(`{}`)},
		{name: "a LoadBalancer Service is denied", kind: "Service", op: admissionv1.Create, object: service(corev1.ServiceTypeLoadBalancer)},
		{name: "a Service changed to NodePort is denied", kind: "Service", op: admissionv1.Update, object: service(corev1.ServiceTypeNodePort)},
		{name: "a ClusterIP Service, a template like any other, is allowed", kind: "Service", op: admissionv1.Create, object: service(corev1.ServiceTypeClusterIP), allowed: true},
		{name: "a ClusterIP Service with externalIPs is denied", kind: "Service", op: admissionv1.Create, object: externalIPs("203.0.113.7")},
		{name: "a Service given externalIPs by an update is denied", kind: "Service", op: admissionv1.Update, object: externalIPs("203.0.113.7", "203.0.113.8")},
		{name: "a Pod in kube-system, labelled federated before that was refused, is allowed", namespace: "kube-system", kind: "Pod", op: admissionv1.Create, object: []byte(`{}`), allowed: true},
		{name: "a Pod in flotilla-system is allowed", namespace: "flotilla-system", kind: "Pod", op: admissionv1.Create, object: []byte(`{}`), allowed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.namespace
			if ns == "" {
				ns = "shop"
			}
			resp := (&InertNamespace{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Namespace: ns, Operation: tc.op, SubResource: tc.sub,
				Kind:   metav1.GroupVersionKind{Version: "v1", Kind: tc.kind},
				Object: runtime.RawExtension{Raw: tc.object},
			}})
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %t, want %t (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if !tc.allowed && (resp.Result == nil || resp.Result.Code != 403) {
				t.Errorf("a denial is Forbidden with the reason, got %+v", resp.Result)
			}
		})
	}
}
