package quota

import (
	"context"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/webhooks"
)

// DefaultWebhookConfiguration is the name of flotilla-manager's
// ValidatingWebhookConfiguration as the release manifests install it
// (config/webhook, with kustomize's name prefix). The flotilla-manager-writes
// admission policy lets the manager change, in this one configuration, only
// the warning webhooks' namespaceSelector.
const DefaultWebhookConfiguration = "flotilla-validating-webhook-configuration"

// WebhookScope keeps the quota warning webhooks (webhooks.WorkloadQuota) to
// the namespaces that hold a FederatedResourceQuota. The warnings only ever
// concern those namespaces, and without the scope every Deployment,
// StatefulSet, ReplicaSet and Job written to any federated namespace of the
// hub would wait on a call to the manager — most of what a burst of
// templates costs the hub beyond a plain apiserver.
//
// It owns one field: the namespaceSelector of the warning webhooks, which
// becomes the installed selector (flotilla.io/federated=true) and a
// kubernetes.io/metadata.name In [namespaces with a quota] requirement. An
// installer that writes the configuration again (clusterctl upgrade) puts
// the installed selector back; the configuration's own events bring the
// scope back at once. Writes carry the configuration's resourceVersion: a
// concurrent writer (cert-manager injecting the CA) is never overwritten.
type WebhookScope struct {
	Client client.Client
	// Configuration names the ValidatingWebhookConfiguration holding the
	// warning webhooks; DefaultWebhookConfiguration when empty.
	Configuration string
}

// The detector's */* patch covers this rule today; it is named so that the
// scope needs nothing wider if that is ever narrowed.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;patch,resourceNames=flotilla-validating-webhook-configuration
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=federatedresourcequotas,verbs=get;list;watch

// SetupWithManager registers the controller. The manager's cache should read
// ValidatingWebhookConfigurations through a metadata.name field selector on
// Configuration (WebhookConfigurationCache): the rule named above grants
// list and watch of that one name only.
func (r *WebhookScope) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Configuration == "" {
		r.Configuration = DefaultWebhookConfiguration
	}
	toConfiguration := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: r.Configuration}}}
	})
	// A quota's namespace never changes: only its coming and going matter.
	quotaComesOrGoes := predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
	return ctrl.NewControllerManagedBy(mgr).
		Named("quota-webhook-scope").
		For(&admissionregistrationv1.ValidatingWebhookConfiguration{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == r.Configuration
		}))).
		Watches(&policyv1alpha1.FederatedResourceQuota{}, toConfiguration, builder.WithPredicates(quotaComesOrGoes)).
		WithOptions(options).
		Complete(r)
}

// WebhookConfigurationCache is the manager cache's setting for
// ValidatingWebhookConfigurations that WebhookScope needs: only the one
// named, through a metadata.name field selector, which is all the rule
// named above lets it list and watch.
func WebhookConfigurationCache(name string) (client.Object, cache.ByObject) {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{}, cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name)}
}

// Reconcile brings the warning webhooks' namespaceSelector to the
// namespaces that hold a quota now.
func (r *WebhookScope) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := r.Client.Get(ctx, req.NamespacedName, cfg); err != nil {
		// Not installed (webhooks disabled, or not yet): its creation is an
		// event of this controller.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	quotas := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := r.Client.List(ctx, quotas); err != nil {
		return ctrl.Result{}, err
	}
	namespaces := make([]string, 0, len(quotas.Items))
	for i := range quotas.Items {
		namespaces = append(namespaces, quotas.Items[i].Namespace)
	}
	slices.Sort(namespaces)
	namespaces = slices.Compact(namespaces)

	before := cfg.DeepCopy()
	changed := false
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if !slices.Contains(webhooks.WorkloadQuotaWebhooks, w.Name) {
			continue
		}
		if scoped := ScopedSelector(w.NamespaceSelector, namespaces); !equality.Semantic.DeepEqual(scoped, w.NamespaceSelector) {
			w.NamespaceSelector, changed = scoped, true
		}
	}
	if !changed {
		return ctrl.Result{}, nil
	}
	if err := r.Client.Patch(ctx, cfg, client.StrategicMergeFrom(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil // the write that won is an event too; read it again
		}
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("quota warnings scoped", "namespaces", namespaces)
	return ctrl.Result{}, nil
}

// ScopedSelector is installed with its kubernetes.io/metadata.name In
// requirement set to namespaces (sorted). No namespace is named "", so an
// empty list is written as In [""], which matches none: In needs a value.
func ScopedSelector(installed *metav1.LabelSelector, namespaces []string) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if installed != nil {
		out = installed.DeepCopy()
	}
	out.MatchExpressions = slices.DeleteFunc(out.MatchExpressions, func(e metav1.LabelSelectorRequirement) bool {
		return e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpIn
	})
	values := slices.Clone(namespaces)
	if len(values) == 0 {
		values = []string{""}
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: values,
	})
	return out
}
