package webhooks

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/tenancy"
)

// FederatedNamespacePath is where the federated-namespace webhook is served.
const FederatedNamespacePath = "/validate-federated-namespace"

// +kubebuilder:webhook:path=/validate-federated-namespace,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=namespaces,verbs=create;update,versions=v1,name=federated.namespace.flotilla.io,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchLabels":{"flotilla.io/federated":"true"}}}`

// FederatedNamespace refuses the federated label on namespaces that must
// never be inert nor hold templates (tenancy.NotFederatable: kube-*,
// flotilla-system, flotilla-es-*), naming the namespace and why; it admits
// default with a warning (tenancy.DefaultFederatedWarning). The
// objectSelector sends it only namespaces labelled federated, before or
// after the change; removing the label is always admitted.
type FederatedNamespace struct{}

// SetupWithManager registers the webhook.
func (w *FederatedNamespace) SetupWithManager(mgr ctrl.Manager) error {
	mgr.GetWebhookServer().Register(FederatedNamespacePath, &admission.Webhook{Handler: w})
	return nil
}

// Handle denies the label where it may not be.
func (w *FederatedNamespace) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	ns := &corev1.Namespace{}
	if err := json.Unmarshal(req.Object.Raw, ns); err != nil {
		return admission.Errored(400, fmt.Errorf("decode Namespace: %w", err))
	}
	if ns.Labels[policyv1alpha1.FederatedLabel] != "true" {
		return admission.Allowed("")
	}
	if why := tenancy.NotFederatable(ns.Name); why != "" {
		return admission.Denied(why)
	}
	if ns.Name == "default" {
		return admission.Allowed("").WithWarnings(tenancy.DefaultFederatedWarning)
	}
	return admission.Allowed("")
}
