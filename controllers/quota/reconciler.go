package quota

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// Event reasons on FederatedResourceQuotas (the condition reasons, for failures).
const (
	// StaticAssignmentFailedReason: a static assignment's ResourceQuota
	// could not be put in its member; the message says which and why.
	StaticAssignmentFailedReason = "StaticAssignmentFailed"
)

const (
	// memberRetry is how soon an assignment to a member that is not
	// enrolled (yet) is tried again.
	memberRetry = 10 * time.Second
	// syncRetry is how soon usage is read again while the tracker has not
	// seen every binding yet.
	syncRetry = time.Second
)

// ownedConditions are the quota conditions this controller writes.
var ownedConditions = []string{policyv1alpha1.QuotaConditionReady, policyv1alpha1.QuotaConditionStaticAssignmentsApplied}

// +kubebuilder:rbac:groups=policy.flotilla.io,resources=federatedresourcequotas,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=federatedresourcequotas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=federatedresourcequotas/finalizers,verbs=update
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler writes each FederatedResourceQuota's status and keeps the
// ResourceQuotas of its static assignments in members.
type Reconciler struct {
	Client   client.Client
	Tracker  *tracker.Tracker
	Recorder events.EventRecorder
}

// SetupWithManager registers the controller: quotas, their namespaces,
// the Works of their assignments, the members they name, and the tracker's
// reports of usage changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Tracker == nil || r.Recorder == nil {
		return errors.New("quota: Client, Tracker and Recorder must be set")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("federatedresourcequota").
		For(&policyv1alpha1.FederatedResourceQuota{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted()))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.quotasOfNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(workToQuota),
			builder.WithPredicates(assignmentWork())).
		Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.quotasAssigningTo),
			builder.WithPredicates(memberComesOrGoes())).
		WatchesRawSource(quotasChanged(r.Client, r.Tracker)).
		WithOptions(options).
		Complete(r)
}

// Reconcile writes one quota's status in one patch, after keeping its
// static assignments' Works; on deletion it removes those Works first.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	q := &policyv1alpha1.FederatedResourceQuota{}
	if err := r.Client.Get(ctx, req.NamespacedName, q); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !q.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, q)
	}
	if _, err := finalizers.EnsureFinalizer(ctx, r.Client, q, policyv1alpha1.FederatedResourceQuotaFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(q, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	s := &scope{quota: q, previous: map[string]*metav1.Condition{}}
	for _, t := range ownedConditions {
		s.previous[t] = conditions.Get(q, t).DeepCopy() // Get points into the list Set changes
	}
	defer func() {
		r.reportFailures(s)
		if err := helper.Patch(ctx, q, patch.WithOwnedConditions{Conditions: ownedConditions}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, fmt.Errorf("patch FederatedResourceQuota %s: %w", req.NamespacedName, err)})
		}
	}()

	phases := []func(context.Context, *scope) (bool, error){
		r.checkNamespace,
		r.writeAssignments,
		r.removeStaleWorks,
		r.aggregateAssignments,
		r.measureUsage,
	}
	for _, phase := range phases {
		proceed, err := phase(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !proceed {
			break
		}
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// scope is one reconciliation of one quota.
type scope struct {
	quota    *policyv1alpha1.FederatedResourceQuota
	previous map[string]*metav1.Condition
	// works are the assignments' Works by member, once written.
	works map[string]*workv1alpha1.Work
	// failures are assignments that could not be rendered.
	failures []failure
	// failed: some assignment failed, rendered or in its member (not
	// merely not applied yet).
	failed  bool
	requeue time.Duration
}

type failure struct {
	member, reason, message string
}

func (s *scope) fail(member, reason, format string, args ...any) {
	s.failures = append(s.failures, failure{member: member, reason: reason, message: fmt.Sprintf(format, args...)})
}

func (s *scope) requeueAfter(d time.Duration) {
	if s.requeue == 0 || d < s.requeue {
		s.requeue = d
	}
}

// checkNamespace stops at a namespace that is not federated: it holds no
// templates, so the quota limits nothing, and the user is told the one step
// to take. Static assignments are not rendered there; Works written while
// it was federated are left as they are.
func (r *Reconciler) checkNamespace(ctx context.Context, s *scope) (bool, error) {
	q := s.quota
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: q.Namespace}, ns); err != nil {
		return false, fmt.Errorf("read namespace %s: %w", q.Namespace, err)
	}
	if ns.Labels[policyv1alpha1.FederatedLabel] == "true" {
		return true, nil
	}
	q.Status.Overall, q.Status.OverallUsed = nil, nil
	conditions.Set(q, metav1.Condition{
		Type: policyv1alpha1.QuotaConditionReady, Status: metav1.ConditionFalse, Reason: policyv1alpha1.QuotaReasonNamespaceNotFederated,
		ObservedGeneration: q.Generation,
		Message: fmt.Sprintf("namespace %s is not federated, so it holds no templates and the quota is not in force; federate it: kubectl label namespace %s %s=true",
			q.Namespace, q.Namespace, policyv1alpha1.FederatedLabel),
	})
	return false, nil
}

// writeAssignments writes the Work of every static assignment to an
// enrolled member that is not leaving.
func (r *Reconciler) writeAssignments(ctx context.Context, s *scope) (bool, error) {
	s.works = map[string]*workv1alpha1.Work{}
	for _, a := range s.quota.Spec.StaticAssignments {
		m := &clusterv1alpha1.MemberCluster{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: a.ClusterName}, m)
		switch {
		case apierrors.IsNotFound(err):
			s.fail(a.ClusterName, policyv1alpha1.QuotaReasonMemberNotFound, "no member named %s", a.ClusterName)
			s.requeueAfter(memberRetry)
			continue
		case err != nil:
			return false, fmt.Errorf("read MemberCluster %s: %w", a.ClusterName, err)
		case !m.DeletionTimestamp.IsZero() || conditions.IsTrue(m, clusterv1alpha1.ConditionTerminating):
			s.fail(a.ClusterName, policyv1alpha1.QuotaReasonMemberLeaving, "member %s is being removed; its ResourceQuota is removed so that it can drain", a.ClusterName)
			continue
		}
		w, err := writeWork(ctx, r.Client, s.quota, a)
		if apierrors.IsNotFound(err) {
			s.fail(a.ClusterName, policyv1alpha1.QuotaReasonMemberNotFound, "execution namespace %s does not exist: the member is not enrolled (yet)",
				clusterv1alpha1.ExecutionNamespace(a.ClusterName))
			s.requeueAfter(memberRetry)
			continue
		}
		if err != nil {
			return false, fmt.Errorf("write the Work of member %s: %w", a.ClusterName, err)
		}
		s.works[a.ClusterName] = w
	}
	return true, nil
}

// removeStaleWorks deletes the Works of members no longer assigned (or
// leaving), which removes their ResourceQuotas from the members.
func (r *Reconciler) removeStaleWorks(ctx context.Context, s *scope) (bool, error) {
	works, err := worksOf(ctx, r.Client, s.quota)
	if err != nil {
		return false, err
	}
	for i := range works {
		if _, keep := s.works[works[i].Labels[clusterv1alpha1.MemberLabel]]; !keep {
			if err := deleteWork(ctx, r.Client, &works[i]); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// aggregateAssignments reports each assigned member's ResourceQuota status
// and whether every member holds its ResourceQuota.
func (r *Reconciler) aggregateAssignments(_ context.Context, s *scope) (bool, error) {
	q := s.quota
	q.Status.AggregatedStatus = nil
	if len(q.Spec.StaticAssignments) == 0 {
		conditions.Delete(q, policyv1alpha1.QuotaConditionStaticAssignmentsApplied)
		return true, nil
	}
	var notApplied []string
	for _, a := range q.Spec.StaticAssignments {
		item := policyv1alpha1.ClusterQuotaStatus{ClusterName: a.ClusterName, ResourceQuotaStatus: corev1.ResourceQuotaStatus{Hard: a.Hard.DeepCopy()}}
		if w := s.works[a.ClusterName]; w != nil {
			if st, ok := memberQuotaStatus(w); ok {
				item.ResourceQuotaStatus = st
			}
			if applied := conditions.Get(w, workv1alpha1.WorkApplied); applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration != w.Generation {
				msg := "not applied yet"
				if applied != nil && applied.Status == metav1.ConditionFalse {
					msg, s.failed = applied.Message, true
				}
				notApplied = append(notApplied, "member "+a.ClusterName+": "+msg)
			}
		}
		q.Status.AggregatedStatus = append(q.Status.AggregatedStatus, item)
	}
	c := metav1.Condition{Type: policyv1alpha1.QuotaConditionStaticAssignmentsApplied, ObservedGeneration: q.Generation}
	switch {
	case len(s.failures) > 0:
		s.failed = true
		parts := make([]string, len(s.failures))
		for i, f := range s.failures {
			parts[i] = "member " + f.member + ": " + f.message
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, s.failures[0].reason, strings.Join(append(parts, notApplied...), "; ")
	case len(notApplied) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, policyv1alpha1.QuotaReasonNotApplied, strings.Join(notApplied, "; ")
		s.requeueAfter(memberRetry)
	default:
		members := make([]string, len(q.Spec.StaticAssignments))
		for i, a := range q.Spec.StaticAssignments {
			members[i] = a.ClusterName
		}
		c.Status, c.Reason = metav1.ConditionTrue, policyv1alpha1.QuotaReasonApplied
		c.Message = fmt.Sprintf("ResourceQuota %s/%s applied on %s", q.Namespace, q.Name, strings.Join(members, ", "))
	}
	conditions.Set(q, c)
	return true, nil
}

// measureUsage writes overall and what the namespace's bindings use of each
// of its keys, and the Ready condition.
func (r *Reconciler) measureUsage(_ context.Context, s *scope) (bool, error) {
	q := s.quota
	if !r.Tracker.Synced() {
		s.requeueAfter(syncRetry)
		return false, nil
	}
	q.Status.Overall = q.Spec.Overall.DeepCopy()
	q.Status.OverallUsed = quota.Only(r.Tracker.Used(q.Namespace), q.Spec.Overall)
	msg := "in force: the scheduler places nothing that would take the namespace past spec.overall"
	conditions.Set(q, metav1.Condition{Type: policyv1alpha1.QuotaConditionReady, Status: metav1.ConditionTrue,
		Reason: policyv1alpha1.QuotaReasonInForce, Message: msg, ObservedGeneration: q.Generation})
	return true, nil
}

// reportFailures records a Warning event when a condition newly turns
// False for a reason the user must act on (not while a member is merely
// still applying).
func (r *Reconciler) reportFailures(s *scope) {
	q := s.quota
	for _, t := range ownedConditions {
		cur := conditions.Get(q, t)
		if cur == nil || cur.Status != metav1.ConditionFalse {
			continue
		}
		if prev := s.previous[t]; prev != nil && prev.Status == cur.Status && prev.Reason == cur.Reason && prev.Message == cur.Message {
			continue
		}
		reason := cur.Reason
		if t == policyv1alpha1.QuotaConditionStaticAssignmentsApplied {
			if !s.failed {
				continue
			}
			reason = StaticAssignmentFailedReason
		}
		r.Recorder.Eventf(q, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", cur.Message)
	}
}

// reconcileDelete removes the assignments' Works; the quota goes once they are gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota) error {
	works, err := worksOf(ctx, r.Client, q)
	if err != nil {
		return err
	}
	for i := range works {
		if err := deleteWork(ctx, r.Client, &works[i]); err != nil {
			return err
		}
	}
	if len(works) > 0 {
		return nil // Work deletions bring the quota back here.
	}
	if !controllerutil.ContainsFinalizer(q, policyv1alpha1.FederatedResourceQuotaFinalizer) {
		return nil
	}
	before := q.DeepCopy()
	controllerutil.RemoveFinalizer(q, policyv1alpha1.FederatedResourceQuotaFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, q, client.MergeFrom(before)))
}

// quotasOfNamespace maps a Namespace to its quotas.
func (r *Reconciler) quotasOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return quotasOf(ctx, r.Client, ns.GetName())
}

// quotasAssigningTo maps a MemberCluster to the quotas with a static
// assignment to it.
func (r *Reconciler) quotasAssigningTo(ctx context.Context, m client.Object) []reconcile.Request {
	list := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list FederatedResourceQuotas")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, a := range list.Items[i].Spec.StaticAssignments {
			if a.ClusterName == m.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				break
			}
		}
	}
	return out
}

// workToQuota maps an assignment's Work to its quota.
func workToQuota(_ context.Context, w client.Object) []reconcile.Request {
	a := w.GetAnnotations()
	name := a[policyv1alpha1.FederatedResourceQuotaNameAnnotation]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: a[policyv1alpha1.FederatedResourceQuotaNamespaceAnnotation], Name: name}}}
}

// assignmentWork passes events of the Works of static assignments.
func assignmentWork() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[policyv1alpha1.FederatedResourceQuotaPermanentIDLabel]
		return ok
	})
}

// memberComesOrGoes passes a member's creation, deletion and the start or
// end of its leaving.
func memberComesOrGoes() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			if !ok1 || !ok2 {
				return false
			}
			return oldM.DeletionTimestamp.IsZero() != newM.DeletionTimestamp.IsZero() ||
				conditions.IsTrue(oldM, clusterv1alpha1.ConditionTerminating) != conditions.IsTrue(newM, clusterv1alpha1.ConditionTerminating)
		},
	}
}

// deletionStarted passes the update that sets a deletion timestamp.
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
