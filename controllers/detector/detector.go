// Package detector matches resource templates to PropagationPolicies and
// ClusterPropagationPolicies and keeps one binding per claimed template.
//
// Two kinds of controller share a set of kind watches:
//   - the template controller (named "detector") reconciles one template
//     (any kind a policy selects): it chooses the policy that claims it (internal/policymatch),
//     records the claim on the template's labels and annotations, and
//     creates or updates its ResourceBinding (ClusterResourceBinding for a
//     cluster-scoped template) with the replicas and requirements read by
//     internal/interpreter and the placement settings copied from the policy;
//   - the policy controllers (one per policy kind) write each policy's
//     Propagating condition: what it selects and, when nothing propagates,
//     why (NamespaceNotFederated, NoMatchingTemplates, …).
//
// Templates are watched metadata-only, one informer per apiVersion and kind
// that some policy selects, added as policies appear (never removed while
// the manager runs): the hub never caches the content of every Secret or
// ConfigMap it holds. The full template is read from the API server when its
// binding is written.
//
// Templates of a namespace without flotilla.io/federated=true are never
// claimed: the policy says NamespaceNotFederated and the template gets an
// event. A binding made while the namespace was federated is left as it is
// (neither updated nor deleted) until the label is back.
//
// Never templates: objects controlled by another object (a ReplicaSet of a
// hub Deployment, an EndpointSlice of a Service), the inert quota, each
// namespace's kube-root-ca.crt ConfigMap and default ServiceAccount.
package detector

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Templates can be of any kind the hub serves: the detector watches their
// metadata and records a claim by patching their labels and annotations.
// RBAC cannot narrow a patch to some labels; the hub's admission policy
// flotilla-manager-writes (config/admission/manager_writes.yaml) refuses any
// other change the manager would make to an object that is not its own.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=propagationpolicies/status;clusterpropagationpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Detector is the template controller and the policy controllers.
type Detector struct {
	// Client is the manager's client: metadata reads come from its cache,
	// unstructured reads from the API server.
	Client client.Client
	// APIReader reads full templates from the API server.
	APIReader client.Reader
	// Cache is where the template watches come from.
	Cache cache.Cache
	// RESTMapper tells the kinds the hub serves and their scope.
	RESTMapper meta.RESTMapper
	// Recorder records events on templates.
	Recorder events.EventRecorder
	// Interpreter reads templates' replicas; nil reads built-in kinds only.
	Interpreter *interpreter.Interpreter
	// KindChanged, when set, carries kinds whose templates are to be read
	// again (their interpreter customizations changed).
	KindChanged <-chan event.TypedGenericEvent[schema.GroupVersionKind]
	// Templates, when set, hands the templates read here to the render
	// phase (binding.RecentTemplates).
	Templates *binding.RecentTemplates
	// Batching, when set, holds new templates while a burst of them
	// arrives.
	Batching *Batching
}

// SetupWithManager registers the template controller and the two policy
// controllers. templateOptions apply to the template controller (e.g.
// MaxConcurrentReconciles); the policy controllers take the manager's
// defaults.
func (d *Detector) SetupWithManager(ctx context.Context, mgr ctrl.Manager, templateOptions controller.TypedOptions[TemplateKey]) error {
	if d.Client == nil || d.APIReader == nil || d.Cache == nil || d.RESTMapper == nil || d.Recorder == nil {
		return fmt.Errorf("detector: Client, APIReader, Cache, RESTMapper and Recorder must be set")
	}
	kinds := &kindWatches{}
	templates := &templateReconciler{Detector: d, kinds: kinds}
	if err := templates.setup(mgr, templateOptions); err != nil {
		return err
	}
	for _, cluster := range []bool{false, true} {
		p := &policyReconciler{Detector: d, kinds: kinds, cluster: cluster}
		if err := p.setup(mgr); err != nil {
			return err
		}
	}
	return nil
}

// TemplateKey names one resource template: the template controller's request.
type TemplateKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (k TemplateKey) String() string {
	if k.Namespace == "" {
		return k.GVK.Kind + " " + k.Name
	}
	return k.GVK.Kind + " " + k.Namespace + "/" + k.Name
}

// ObjectKey is the template's namespace and name.
func (k TemplateKey) ObjectKey() client.ObjectKey {
	return client.ObjectKey{Namespace: k.Namespace, Name: k.Name}
}
