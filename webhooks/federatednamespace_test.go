package webhooks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestFederatedNamespaceRefusesTheLabelWhereItCannotBe(t *testing.T) {
	namespace := func(name string, labels map[string]string) []byte {
		b, _ := json.Marshal(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		return b
	}
	federated := map[string]string{"flotilla.io/federated": "true"}
	cases := []struct {
		name    string
		op      admissionv1.Operation
		object  []byte
		allowed bool
		// message is part of the denial, or of the warning when allowed.
		message string
	}{
		{name: "labelling kube-system", op: admissionv1.Update, object: namespace("kube-system", federated),
			message: "namespace kube-system cannot be federated (flotilla.io/federated=true): it holds the management cluster's own components"},
		{name: "creating kube-public labelled", op: admissionv1.Create, object: namespace("kube-public", federated), message: "namespace kube-public cannot be federated"},
		{name: "labelling kube-node-lease", op: admissionv1.Update, object: namespace("kube-node-lease", federated), message: "namespace kube-node-lease cannot be federated"},
		{name: "labelling flotilla-system", op: admissionv1.Update, object: namespace("flotilla-system", federated), message: "Flotilla itself runs there"},
		{name: "labelling an execution namespace", op: admissionv1.Update, object: namespace("flotilla-es-member1", federated), message: "flotilla-es-* namespaces hold members' Works"},
		{name: "removing the label from kube-system", op: admissionv1.Update, object: namespace("kube-system", nil), allowed: true},
		{name: "labelling a tenant's namespace", op: admissionv1.Create, object: namespace("shop", federated), allowed: true},
		{name: "labelling default, with a warning", op: admissionv1.Update, object: namespace("default", federated), allowed: true,
			message: "namespace default is federated: from now on it admits no Pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := (&FederatedNamespace{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.op, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"},
				Object: runtime.RawExtension{Raw: tc.object},
			}})
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %t, want %t (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
			switch {
			case !tc.allowed && (resp.Result == nil || resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, tc.message)):
				t.Errorf("denial %+v, want Forbidden containing %q", resp.Result, tc.message)
			case tc.allowed && tc.message != "" && (len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], tc.message)):
				t.Errorf("warnings %q, want one containing %q", resp.Warnings, tc.message)
			case tc.allowed && tc.message == "" && len(resp.Warnings) > 0:
				t.Errorf("warnings %q, want none", resp.Warnings)
			}
		})
	}
}
