package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"

	"github.com/flotilla-io/flotilla/internal/tenancy"
)

// InertNamespacePath is where the inert-namespace webhook is served.
const InertNamespacePath = "/validate-inert-namespace"

// +kubebuilder:webhook:path=/validate-inert-namespace,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods;persistentvolumeclaims;services,verbs=create;update,versions=v1,name=inert.namespace.flotilla.io,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchLabels":{"flotilla.io/federated":"true"},"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease","flotilla-system"]}]}}`

// InertNamespace keeps federated namespaces of the hub inert from the first
// moment they carry the label: no Pod, PersistentVolumeClaim, LoadBalancer
// or NodePort Service, nor a Service with spec.externalIPs (which would make
// the hub's nodes answer for those addresses), is admitted there, whoever
// creates it (the hub's own
// kube-controller-manager runs the Deployments stored as templates). The
// ResourceQuota that the federated-namespace controller keeps in each such
// namespace says the same, but is written a moment after the namespace is
// labelled; a namespace and a Deployment applied together would otherwise
// start Pods on the management cluster in that moment. failurePolicy Fail:
// with the manager down, nothing starts there either.
//
// Namespaces that cannot be federated (tenancy.NotFederatable: kube-*,
// flotilla-system, flotilla-es-*) are never made inert, even when labelled
// before the FederatedNamespace webhook existed: the fixed names are left
// out by the namespaceSelector, so that the cluster's own Pods never wait on
// this webhook, and the handler admits everything in the others.
type InertNamespace struct{}

// SetupWithManager registers the webhook.
func (w *InertNamespace) SetupWithManager(mgr ctrl.Manager) error {
	mgr.GetWebhookServer().Register(InertNamespacePath, &admission.Webhook{Handler: w})
	return nil
}

// Handle denies what would run or hold resources on the hub.
func (w *InertNamespace) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	if tenancy.NotFederatable(req.Namespace) != "" {
		return admission.Allowed("")
	}
	why := fmt.Sprintf("namespace %s is federated (flotilla.io/federated=true): its templates run in member clusters, never on the hub", req.Namespace)
	switch req.Kind.Kind {
	case "Pod":
		if req.Operation == admissionv1.Create && req.SubResource == "" {
			return admission.Denied(why + "; Pods are not admitted here")
		}
	case "PersistentVolumeClaim":
		if req.Operation == admissionv1.Create {
			return admission.Denied(why + "; PersistentVolumeClaims are not admitted here (propagate them in an envelope)")
		}
	case "Service":
		svc := &corev1.Service{}
		if err := json.Unmarshal(req.Object.Raw, svc); err != nil {
			return admission.Errored(400, fmt.Errorf("decode Service: %w", err))
		}
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort {
			return admission.Denied(fmt.Sprintf("%s; a Service of type %s would open the hub (propagate it in an envelope)", why, svc.Spec.Type))
		}
		if len(svc.Spec.ExternalIPs) > 0 {
			return admission.Denied(fmt.Sprintf("%s; a Service with spec.externalIPs (%s) would make the hub's nodes answer for those addresses (members refuse it too, from an envelope or an override, unless a cluster admin labels the namespace %s=true; then propagate it in an envelope)",
				why, strings.Join(svc.Spec.ExternalIPs, ", "), policyv1alpha1.AllowExternalIPsLabel))
		}
	}
	return admission.Allowed("")
}
