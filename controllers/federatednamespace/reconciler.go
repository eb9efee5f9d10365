// Package federatednamespace keeps every federated namespace of the hub
// inert: templates live there, so a ResourceQuota that admits no Pods, no
// PersistentVolumeClaims and no LoadBalancer or NodePort Services makes sure
// none of them runs on the management cluster. The quota is re-created when
// deleted and restored when edited.
//
// Deployments, Jobs and other workload templates are still admitted (the
// quota counts Pods, not their owners), and the hub's own
// kube-controller-manager still creates their ReplicaSets; it is the Pods
// those controllers then create that the quota refuses, which shows as
// FailedCreate events on the ReplicaSets — expected, and harmless. Pods that
// existed before the namespace was labelled are not removed: label a
// namespace before templates go in. Removing the label leaves the quota in
// place; delete it by hand if the namespace is to run workloads again.
//
// The quota's status is filled in at creation (hard limits, zero usage), so
// that quota admission refuses Pods at once rather than after the quota
// controller's first sync.
package federatednamespace

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/tenancy"
)

// QuotaName is the ResourceQuota that keeps a federated namespace inert.
const QuotaName = "flotilla-inert"

// Event reasons on the Namespace.
const (
	// QuotaCreatedReason: the inert quota was missing and has been created.
	QuotaCreatedReason = "InertQuotaCreated"
	// QuotaRestoredReason: the inert quota was edited and has been put back.
	QuotaRestoredReason = "InertQuotaRestored"
	// QuotaFailedReason: the inert quota could not be written.
	QuotaFailedReason = "InertQuotaFailed"
)

// InertHard is the quota's spec.hard: nothing that runs or that reaches
// outside the hub is admitted.
func InertHard() corev1.ResourceList {
	zero := resource.MustParse("0")
	return corev1.ResourceList{
		corev1.ResourcePods:                   zero,
		corev1.ResourcePersistentVolumeClaims: zero,
		corev1.ResourceServicesLoadBalancers:  zero,
		corev1.ResourceServicesNodePorts:      zero,
	}
}

// conflictRequeue is how soon a namespace whose quota was written by
// someone else during the reconcile is looked at again.
const conflictRequeue = 100 * time.Millisecond

// quotaLabels mark the quota as the manager's.
var quotaLabels = map[string]string{"app.kubernetes.io/managed-by": "flotilla-manager"}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=resourcequotas/status,verbs=update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps federated namespaces inert.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager watches federated namespaces and their inert quotas.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Recorder == nil {
		return fmt.Errorf("federatednamespace: Client and Recorder must be set")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("federatednamespace").
		For(&corev1.Namespace{}, builder.WithPredicates(IsFederated())).
		Watches(&corev1.ResourceQuota{},
			handler.EnqueueRequestsFromMapFunc(func(_ context.Context, q client.Object) []ctrl.Request {
				return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: q.GetNamespace()}}}
			}),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(q client.Object) bool { return q.GetName() == QuotaName })),
		).
		WithOptions(options).
		Complete(r)
}

// IsFederated passes events of namespaces labelled flotilla.io/federated=true.
func IsFederated() predicate.Predicate {
	return predicate.NewPredicateFuncs(Federated)
}

// Federated reports whether a namespace is federated: labelled, and not
// one that cannot be (tenancy.NotFederatable: kube-*, flotilla-system,
// flotilla-es-*; the label is refused at admission, but may predate it).
func Federated(ns client.Object) bool {
	return ns.GetLabels()[policyv1alpha1.FederatedLabel] == "true" && tenancy.NotFederatable(ns.GetName()) == ""
}

// Reconcile puts the inert quota in place in a federated namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A namespace being deleted refuses new objects; a quota edit no longer matters.
	if !Federated(ns) || !ns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	err := r.reconcileQuota(ctx, ns)
	if apierrors.IsConflict(err) {
		// Someone wrote the quota meanwhile (quota admission counting a new
		// object, the quota controller): not a failure, look again.
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	if err != nil {
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, QuotaFailedReason, "KeepInert", "%s", err.Error())
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) reconcileQuota(ctx context.Context, ns *corev1.Namespace) error {
	quota := &corev1.ResourceQuota{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: QuotaName}, quota)
	switch {
	case apierrors.IsNotFound(err):
		quota = &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: QuotaName, Labels: maps.Clone(quotaLabels)},
			Spec:       corev1.ResourceQuotaSpec{Hard: InertHard()},
		}
		if err := r.Client.Create(ctx, quota); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // created meanwhile; its event brings us back
			}
			return fmt.Errorf("create ResourceQuota %s/%s: %w", ns.Name, QuotaName, err)
		}
		// Normal: the first creation and a re-creation after a deletion look
		// the same from here, and neither is a failure.
		r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, QuotaCreatedReason, "KeepInert",
			"ResourceQuota %s created: a federated namespace admits no Pods, PVCs, LoadBalancer or NodePort Services", QuotaName)
	case err != nil:
		return fmt.Errorf("read ResourceQuota %s/%s: %w", ns.Name, QuotaName, err)
	}
	if !apiequality.Semantic.DeepEqual(quota.Spec, corev1.ResourceQuotaSpec{Hard: InertHard()}) {
		// Put back the whole spec: scopes or a scope selector would narrow
		// what the quota counts, and a higher hard limit would admit Pods.
		quota.Spec = corev1.ResourceQuotaSpec{Hard: InertHard()}
		if err := r.Client.Update(ctx, quota); err != nil {
			return fmt.Errorf("restore ResourceQuota %s/%s: %w", ns.Name, QuotaName, err)
		}
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, QuotaRestoredReason, "KeepInert",
			"ResourceQuota %s was edited and has been restored: a federated namespace admits no Pods", QuotaName)
	}
	return r.enforceNow(ctx, quota)
}

// enforceNow writes the inert limits into the quota's status when the
// quota controller has not (yet): quota admission enforces what
// status.hard says, which kube-controller-manager's quota controller
// computes from the spec some time after each change — until then Pods
// would be admitted. With hard limits of 0 any Pod is refused whatever is
// used, so missing usage is safe to claim as zero; the quota controller
// corrects it on its next sync.
func (r *Reconciler) enforceNow(ctx context.Context, quota *corev1.ResourceQuota) error {
	if apiequality.Semantic.DeepEqual(quota.Status.Hard, InertHard()) {
		return nil
	}
	used := quota.Status.Used.DeepCopy()
	if used == nil {
		used = corev1.ResourceList{}
	}
	for name := range InertHard() {
		if _, ok := used[name]; !ok {
			used[name] = resource.MustParse("0")
		}
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: InertHard(), Used: used}
	if err := r.Client.Status().Update(ctx, quota); err != nil {
		return fmt.Errorf("write the inert limits into the status of ResourceQuota %s/%s: %w", quota.Namespace, quota.Name, err)
	}
	return nil
}
