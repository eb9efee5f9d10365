// Package execution applies Works to Push-mode members (Pull-mode members'
// agents apply their own): every manifest of a Work is applied to the
// member with server-side apply under the field manager "flotilla", and its
// result — applied or why not, health, the object's status — is written to
// the Work's status.
//
// Conflicts: an object that exists in the member and is not managed by
// Flotilla (neither the flotilla.io/managed-by label nor the "flotilla" field
// manager) is left alone under conflictResolution Abort, and reported; under
// Overwrite it is taken over (apply with force). Objects Flotilla applied
// carry the label.
//
// Removal: objects dropped from a Work's manifests, and all of a Work's
// objects when the Work is deleted (a finalizer holds it), are deleted from
// the member — unless spec.preserveResourcesOnDeletion — but never an
// object Flotilla does not manage, nor one that another Work of the same
// member still carries (two workloads may share a dependency).
//
// Namespaces a Work's objects live in are created in the member when
// missing (labelled as Flotilla's), and never deleted by Flotilla.
//
// Member objects are not watched: a Work is applied again, and its status
// refreshed, every ResyncUnhealthy (default 10s) while some object is not
// applied or not healthy, and every ResyncHealthy (default 60s) otherwise.
package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// MemberClients hands out a client of a member that acts as the hub's
// scoped identity there, with the member's REST mapper (which must find
// kinds the member serves after it started, e.g. controller-runtime's
// dynamic mapper). Errors mean the member cannot be reached now.
type MemberClients interface {
	ClientFor(ctx context.Context, member string) (client.Client, meta.RESTMapper, error)
}

// Options tune the execution controller.
type Options struct {
	// ResyncUnhealthy is how soon a Work with an object not applied or not
	// healthy is applied again. Default 10s.
	ResyncUnhealthy time.Duration
	// ResyncHealthy is how soon a Work whose objects are all healthy is
	// applied again, to repair drift and refresh status. Default 60s.
	ResyncHealthy time.Duration
}

func (o *Options) defaults() {
	if o.ResyncUnhealthy <= 0 {
		o.ResyncUnhealthy = 10 * time.Second
	}
	if o.ResyncHealthy <= 0 {
		o.ResyncHealthy = 60 * time.Second
	}
}

// Event reasons on Works.
const (
	// ApplyFailedReason: a manifest could not be applied (the Applied
	// condition's reason says why: APINotEnabled, Conflict, ApplyFailed…).
	ApplyFailedReason = "ApplyFailed"
	// RemoveFailedReason: an object could not be removed from the member.
	RemoveFailedReason = "RemoveFailed"
)

// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler applies Works to Push-mode members.
type Reconciler struct {
	Client        client.Client
	MemberClients MemberClients
	Recorder      events.EventRecorder
	Options
}

// SetupWithManager watches Works in execution namespaces.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.MemberClients == nil || r.Recorder == nil {
		return errors.New("execution: Client, MemberClients and Recorder must be set")
	}
	r.defaults()
	return ctrl.NewControllerManagedBy(mgr).
		Named("execution").
		For(&workv1alpha1.Work{}, builder.WithPredicates(
			InExecutionNamespace(),
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted()),
		)).
		WithOptions(options).
		Complete(r)
}

// InExecutionNamespace passes events of objects in a flotilla-es-<member> namespace.
func InExecutionNamespace() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := memberOf(o.GetNamespace())
		return ok
	})
}

func memberOf(namespace string) (string, bool) {
	member, ok := strings.CutPrefix(namespace, clusterv1alpha1.ExecutionNamespacePrefix)
	return member, ok && member != ""
}

func deletionStarted() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// ownedConditions are the Work conditions this controller writes.
var ownedConditions = []string{workv1alpha1.WorkApplied, workv1alpha1.WorkAvailable, workv1alpha1.WorkDispatching}

// Reconcile applies a Work to its member, or removes its objects from the
// member when it is being deleted; its status is written in one patch.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	memberName, ok := memberOf(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil
	}
	work := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, work); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	member := &clusterv1alpha1.MemberCluster{}
	memberErr := r.Client.Get(ctx, client.ObjectKey{Name: memberName}, member)
	if memberErr != nil && !apierrors.IsNotFound(memberErr) {
		return ctrl.Result{}, fmt.Errorf("read MemberCluster %s: %w", memberName, memberErr)
	}
	if memberErr == nil && member.Spec.SyncMode == clusterv1alpha1.Pull {
		// The member's agent applies it, and removes what it applied. A
		// finalizer left from when the member was in Push mode must not
		// hold the Work.
		if !work.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(work, workv1alpha1.ExecutionFinalizer) {
			before := work.DeepCopy()
			controllerutil.RemoveFinalizer(work, workv1alpha1.ExecutionFinalizer)
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, work, client.MergeFrom(before)))
		}
		return ctrl.Result{}, nil
	}

	if work.DeletionTimestamp.IsZero() {
		if _, err := finalizers.EnsureFinalizer(ctx, r.Client, work, workv1alpha1.ExecutionFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	helper, err := patch.NewHelper(work, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := helper.Patch(ctx, work, patch.WithOwnedConditions{Conditions: ownedConditions}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, fmt.Errorf("patch Work %s: %w", req.NamespacedName, err)})
		}
	}()

	if apierrors.IsNotFound(memberErr) {
		if !work.DeletionTimestamp.IsZero() {
			// The member is gone: nothing left to remove the objects from.
			controllerutil.RemoveFinalizer(work, workv1alpha1.ExecutionFinalizer)
			return ctrl.Result{}, nil
		}
		markApplied(work, metav1.ConditionFalse, workv1alpha1.WorkReasonMemberUnavailable, "MemberCluster %s not found", memberName)
		return ctrl.Result{RequeueAfter: r.ResyncUnhealthy}, nil
	}

	s := &scope{work: work, member: memberName}
	if !work.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// scope is one reconciliation of one Work.
type scope struct {
	work   *workv1alpha1.Work
	member string
	client client.Client
	mapper meta.RESTMapper
}

func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	if isTrue(s.work.Spec.SuspendDispatching) {
		conditions.Set(s.work, metav1.Condition{Type: workv1alpha1.WorkDispatching, Status: metav1.ConditionFalse,
			Reason: workv1alpha1.WorkReasonSuspended, Message: "spec.suspendDispatching is true: the Work is not applied to the member"})
		return ctrl.Result{}, nil
	}
	conditions.Set(s.work, metav1.Condition{Type: workv1alpha1.WorkDispatching, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.WorkReasonDispatching, Message: "the Work is applied to member " + s.member})

	if err := r.connect(ctx, s); err != nil {
		markApplied(s.work, metav1.ConditionFalse, workv1alpha1.WorkReasonMemberUnavailable, "%v", err)
		return ctrl.Result{RequeueAfter: r.ResyncUnhealthy}, nil
	}
	results := r.applyManifests(ctx, s)
	if err := r.removeDropped(ctx, s, results); err != nil {
		return ctrl.Result{}, err
	}
	allHealthy := summarise(s.work, results)
	if !allHealthy {
		return ctrl.Result{RequeueAfter: r.ResyncUnhealthy}, nil
	}
	return ctrl.Result{RequeueAfter: r.ResyncHealthy}, nil
}

func (r *Reconciler) connect(ctx context.Context, s *scope) error {
	c, mapper, err := r.MemberClients.ClientFor(ctx, s.member)
	if err != nil {
		return fmt.Errorf("no client for member %s: %w", s.member, err)
	}
	s.client, s.mapper = c, mapper
	return nil
}

// reconcileDelete removes the Work's objects from the member, then lets the Work go.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !isTrue(s.work.Spec.PreserveResourcesOnDeletion) {
		if err := r.connect(ctx, s); err != nil {
			markApplied(s.work, metav1.ConditionFalse, workv1alpha1.WorkReasonMemberUnavailable, "%v", err)
			return ctrl.Result{}, err
		}
		ids := appliedIdentifiers(s.work.Status.ManifestStatuses)
		ids = append(ids, manifestIdentifiers(s.work)...)
		if err := r.remove(ctx, s, dedupe(ids)); err != nil {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(s.work, workv1alpha1.ExecutionFinalizer)
	return ctrl.Result{}, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

func markApplied(w *workv1alpha1.Work, status metav1.ConditionStatus, reason, format string, args ...any) {
	conditions.Set(w, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: status, Reason: reason,
		Message: fmt.Sprintf(format, args...), ObservedGeneration: w.Generation})
}

// summarise writes the manifest statuses and the Applied and Available
// conditions, and reports whether every object is applied and healthy.
// Applied=False takes the reason of the first manifest not applied.
func summarise(w *workv1alpha1.Work, results []result) bool {
	var notApplied, notHealthy []string
	reason := ""
	w.Status.ManifestStatuses = make([]workv1alpha1.ManifestStatus, 0, len(results))
	for _, res := range results {
		st := res.status
		w.Status.ManifestStatuses = append(w.Status.ManifestStatuses, st)
		name := describe(st.Identifier)
		switch {
		case !st.Applied:
			if reason == "" {
				reason = res.reason
			}
			notApplied = append(notApplied, name+": "+st.Message)
		case st.Health != workv1alpha1.ResourceHealthy:
			notHealthy = append(notHealthy, name+": "+st.Message)
		}
	}
	n := len(results)
	if len(notApplied) > 0 {
		markApplied(w, metav1.ConditionFalse, reason, "%d of %d manifests not applied: %s", len(notApplied), n, strings.Join(notApplied, "; "))
	} else {
		markApplied(w, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied, "applied %s", plural(n, "manifest"))
	}
	available := metav1.Condition{Type: workv1alpha1.WorkAvailable, ObservedGeneration: w.Generation}
	switch {
	case len(notApplied) > 0:
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, workv1alpha1.WorkReasonNotAvailable, "not every manifest is applied"
	case len(notHealthy) > 0:
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, workv1alpha1.WorkReasonNotAvailable, strings.Join(notHealthy, "; ")
	default:
		available.Status, available.Reason, available.Message = metav1.ConditionTrue, workv1alpha1.WorkReasonAvailable, "every object is healthy"
	}
	conditions.Set(w, available)
	return len(notApplied) == 0 && len(notHealthy) == 0
}

// describe is e.g. "apps/v1 Deployment fleet/web".
func describe(id workv1alpha1.ResourceIdentifier) string {
	gv := id.Version
	if id.Group != "" {
		gv = id.Group + "/" + id.Version
	}
	name := id.Name
	if id.Namespace != "" {
		name = id.Namespace + "/" + id.Name
	}
	return gv + " " + id.Kind + " " + name
}

// plural is "1 manifest" or "n manifests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
