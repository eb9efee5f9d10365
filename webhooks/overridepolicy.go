package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/membernames"
	"github.com/flotilla-io/flotilla/internal/overrides"
)

// +kubebuilder:webhook:path=/validate-policy-flotilla-io-v1alpha1-overridepolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.flotilla.io,resources=overridepolicies,verbs=create;update,versions=v1alpha1,name=validation.overridepolicy.policy.flotilla.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-policy-flotilla-io-v1alpha1-clusteroverridepolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.flotilla.io,resources=clusteroverridepolicies,verbs=create;update,versions=v1alpha1,name=validation.clusteroverridepolicy.policy.flotilla.io,admissionReviewVersions=v1

// OverridePolicy refuses OverridePolicies whose overriders address an
// object's identity (/apiVersion, /kind, /metadata/name,
// /metadata/namespace) or its owner references, naming each field
// (internal/overrides.ValidateIdentityPaths). A webhook rather than CEL:
// the rule compares RFC 6901-decoded pointers token by token (CEL has no
// pointer decoding, and a string comparison would be fooled by ~1 escapes),
// the paths sit three lists deep in lists without maxItems, which CEL's
// cost estimate multiplies, and one Go function serves both kinds, unit
// tested with the overrides library it protects.
//
// It also warns (admission warnings, printed by kubectl apply) of rules whose
// targetCluster.clusterNames name a cluster that is not a member of the
// fleet: a misspelt name otherwise only means the rule never applies.
type OverridePolicy struct {
	// Members reads MemberClusters; the manager's client when nil.
	Members client.Reader
}

var _ admission.Validator[*policyv1alpha1.OverridePolicy] = &OverridePolicy{}

// SetupWithManager registers the webhook.
func (w *OverridePolicy) SetupWithManager(mgr ctrl.Manager) error {
	if w.Members == nil {
		w.Members = mgr.GetClient()
	}
	return ctrl.NewWebhookManagedBy(mgr, &policyv1alpha1.OverridePolicy{}).WithValidator(w).Complete()
}

// ValidateCreate checks a new policy.
func (w *OverridePolicy) ValidateCreate(ctx context.Context, obj *policyv1alpha1.OverridePolicy) (admission.Warnings, error) {
	return unknownMembers(ctx, w.Members, &obj.Spec), validateOverrideSpec("OverridePolicy", obj.Name, &obj.Spec)
}

// ValidateUpdate checks a changed policy.
func (w *OverridePolicy) ValidateUpdate(ctx context.Context, _, obj *policyv1alpha1.OverridePolicy) (admission.Warnings, error) {
	return unknownMembers(ctx, w.Members, &obj.Spec), validateOverrideSpec("OverridePolicy", obj.Name, &obj.Spec)
}

// ValidateDelete allows every deletion.
func (w *OverridePolicy) ValidateDelete(context.Context, *policyv1alpha1.OverridePolicy) (admission.Warnings, error) {
	return nil, nil
}

// ClusterOverridePolicy applies OverridePolicy's rule to
// ClusterOverridePolicies: a cluster admin who needs another object in a
// member propagates that object, not an override of this one.
type ClusterOverridePolicy struct {
	// Members reads MemberClusters; the manager's client when nil.
	Members client.Reader
}

var _ admission.Validator[*policyv1alpha1.ClusterOverridePolicy] = &ClusterOverridePolicy{}

// SetupWithManager registers the webhook.
func (w *ClusterOverridePolicy) SetupWithManager(mgr ctrl.Manager) error {
	if w.Members == nil {
		w.Members = mgr.GetClient()
	}
	return ctrl.NewWebhookManagedBy(mgr, &policyv1alpha1.ClusterOverridePolicy{}).WithValidator(w).Complete()
}

// ValidateCreate checks a new policy.
func (w *ClusterOverridePolicy) ValidateCreate(ctx context.Context, obj *policyv1alpha1.ClusterOverridePolicy) (admission.Warnings, error) {
	return unknownMembers(ctx, w.Members, &obj.Spec), validateOverrideSpec("ClusterOverridePolicy", obj.Name, &obj.Spec)
}

// ValidateUpdate checks a changed policy.
func (w *ClusterOverridePolicy) ValidateUpdate(ctx context.Context, _, obj *policyv1alpha1.ClusterOverridePolicy) (admission.Warnings, error) {
	return unknownMembers(ctx, w.Members, &obj.Spec), validateOverrideSpec("ClusterOverridePolicy", obj.Name, &obj.Spec)
}

// ValidateDelete allows every deletion.
func (w *ClusterOverridePolicy) ValidateDelete(context.Context, *policyv1alpha1.ClusterOverridePolicy) (admission.Warnings, error) {
	return nil, nil
}

func validateOverrideSpec(kind, name string, spec *policyv1alpha1.OverrideSpec) error {
	errs := overrides.ValidateIdentityPaths(spec, field.NewPath("spec"))
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(policyv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}

// unknownMembers warns of override rules naming clusters that are not
// members. Warnings only: a member may be enrolled after its overrides are
// written, and a failed read of the members warns of nothing.
func unknownMembers(ctx context.Context, members client.Reader, spec *policyv1alpha1.OverrideSpec) admission.Warnings {
	if members == nil || len(membernames.InOverride(spec, func(string) bool { return false })) == 0 {
		return nil
	}
	list := &clusterv1alpha1.MemberClusterList{}
	if err := members.List(ctx, list); err != nil {
		return nil
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	var warnings admission.Warnings
	for _, u := range membernames.InOverride(spec, membernames.Set(names)) {
		warnings = append(warnings, u.String())
	}
	return warnings
}
