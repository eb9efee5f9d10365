// Package enrolment turns opted-in Cluster API Clusters into MemberClusters:
// it names the member, creates its execution namespace, sets up the hub's
// scoped identity in the member (Push) or the agent's hub credentials (Pull),
// keeps the add-on ClusterResourceSets that install flotilla-estimator and
// flotilla-agent, copies the estimator's capacity model into the member's
// status, and drains and removes the member when the Cluster is deleted or
// opts out. Health conditions are controllers/health's. docs/enrolment.md
// has the rules.
package enrolment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// The hub rights enrolment uses. Wide verbs that RBAC cannot narrow by name
// or namespace are confined by the hub's admission policy
// flotilla-manager-writes (config/admission/manager_writes.yaml): Secrets,
// ServiceAccounts, ConfigMaps and RBAC are created, changed in full and
// deleted only in flotilla-system, flotilla-es-<member> and as its own
// flotilla-* add-on objects; namespaces are created only as flotilla-system
// or flotilla-es-<member> and deleted only as the latter.
//
// Clusters: labels, annotations and the enrolment finalizer.
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters/finalizers,verbs=update
// MemberClusters are enrolment's to create and delete.
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters/status,verbs=get;update;patch
// Works: counted while draining; update/patch and works/status are also
// granted to agents, which RBAC lets only a holder grant.
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works/status,verbs=get;update;patch
// Namespaces: flotilla-system and the execution namespaces, created and
// (execution namespaces only, admission-confined) deleted when a member goes.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete
// Secrets: CAPI's kubeconfig Secrets are read in Clusters' namespaces and
// their metadata watched (rotation); written: the hub identity Secrets in
// flotilla-system, the agents' token Secrets in flotilla-es-<member>, the
// agents' add-on Secrets flotilla-agent-<member>-hub next to their Cluster.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// ConfigMaps: the add-on manifests flotilla-estimator and
// flotilla-agent-<member> next to the Clusters (read uncached).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update;patch;delete
// ServiceAccounts: the agents' flotilla-agent-<member> in flotilla-es-<member>
// (read uncached).
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leases: held so that they can be granted to agents (their own Lease).
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update;patch
// RBAC: each Pull-mode agent's Role/RoleBinding in flotilla-es-<member> and
// ClusterRole/ClusterRoleBinding flotilla-agent-<member> (its MemberCluster
// by name). RBAC cannot narrow creation by name; the escalation check keeps
// these within what the manager itself holds; read uncached, never listed.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterroles;clusterrolebindings,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=addons.cluster.x-k8s.io,resources=clusterresourcesets,verbs=get;list;watch;create;update;patch;delete

// Options are the enrolment settings of flotilla-manager.
type Options struct {
	// EnrolAll enrols every CAPI Cluster not labelled flotilla.io/enroll=false.
	EnrolAll bool
	// EstimatorImage and AgentImage are the add-ons' images; the estimator's
	// ClusterResourceSet is not written without an image.
	EstimatorImage, AgentImage string
	// Version labels the add-ons (app.kubernetes.io/version).
	Version string
	// EstimatorPublishInterval is the estimator's debounce.
	EstimatorPublishInterval time.Duration
	// DrainTimeout bounds how long a leaving member's Works may take to go
	// before its hub objects are removed anyway.
	DrainTimeout time.Duration
	// SyncPeriod is how often an enrolled member is revisited: heartbeat,
	// capacity model, API enablements, identity check.
	SyncPeriod time.Duration
	// HubAPIServer is the hub URL Pull-mode agents dial; HubCAData the CA
	// they trust when the agent's token Secret carries none.
	HubAPIServer string
	HubCAData    []byte
}

func (o *Options) defaults() {
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Minute
	}
	if o.SyncPeriod <= 0 {
		o.SyncPeriod = 30 * time.Second
	}
	if o.EstimatorPublishInterval <= 0 {
		o.EstimatorPublishInterval = 10 * time.Second
	}
}

// Reconciler enrols CAPI Clusters as MemberClusters.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the hub.
	Client client.Client
	// APIReader reads Secrets uncached: the hub never caches every Secret.
	APIReader client.Reader
	// Recorder records events on Clusters.
	Recorder events.EventRecorder
	Options

	// workNeeds spares the agent's grant decoding every Work again.
	workNeeds workNeeds
}

// scope is one reconciliation of one Cluster.
type scope struct {
	cluster *capiv1.Cluster
	// memberName is resolved by the first phase.
	memberName string
	// member and memberPatch are set once the MemberCluster exists;
	// memberGone once it has been deleted.
	member      *clusterv1alpha1.MemberCluster
	memberPatch *patch.Helper
	memberGone  bool
	// kubeconfig is CAPI's <cluster>-kubeconfig Secret.
	kubeconfig *corev1.Secret
	// identity is the scoped identity's REST config (Push mode), and
	// observed what the member showed it in this reconcile.
	identity *rest.Config
	observed *observation
	// requeueAfter asks to come back sooner than the sync period.
	requeueAfter time.Duration
}

func (s *scope) requeue(d time.Duration) {
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}

// markEnrolled sets the Enrolled condition on the member, if there is one.
func (s *scope) markEnrolled(status metav1.ConditionStatus, reason, format string, args ...any) {
	if s.member == nil {
		return
	}
	conditions.Set(s.member, metav1.Condition{Type: clusterv1alpha1.ConditionEnrolled, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// Reconcile is the CAPI reconciler shape: fetch, pause check, finalizer,
// patch helper with a deferred patch, deletion branch, then named phases.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)

	cluster := &capiv1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			// The Cluster went without our finalizer (never opted in, or
			// removed by hand or by clusterctl move): drop what it left.
			return ctrl.Result{}, r.reconcileOrphans(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}

	// A paused Cluster gets no change at all, not even a finalizer:
	// clusterctl move pauses Clusters before it copies and deletes them.
	if annotations.IsPaused(cluster, cluster) {
		log.V(4).Info("Cluster is paused, nothing to do")
		return ctrl.Result{}, nil
	}

	optedIn, err := r.optedIn(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	enrolled := controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.ClusterFinalizer)
	if !optedIn && !enrolled {
		// Not ours; a member left behind (finalizer removed by hand) goes.
		return ctrl.Result{}, r.reconcileOrphans(ctx, req.NamespacedName)
	}
	if optedIn && cluster.DeletionTimestamp.IsZero() {
		// Finalizer first, so a Cluster deleted right after opting in still drains.
		added, err := finalizers.EnsureFinalizer(ctx, r.Client, cluster, clusterv1alpha1.ClusterFinalizer)
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted since the cache saw it
		}
		if err != nil || added {
			return ctrl.Result{}, err
		}
	}

	clusterPatch, err := patch.NewHelper(cluster, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	s := &scope{cluster: cluster}
	defer func() {
		// One patch of the Cluster's metadata (member label, name annotation,
		// finalizer) and one of the member's spec and status per reconcile.
		var errs []error
		if err := clusterPatch.Patch(ctx, cluster); err != nil && !r.clusterGone(ctx, req.NamespacedName) {
			errs = append(errs, fmt.Errorf("patch Cluster %s: %w", req.NamespacedName, err))
		}
		if err := r.patchMember(ctx, s, reterr == nil); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			reterr = kerrors.NewAggregate(append([]error{reterr}, errs...))
		}
	}()

	if !cluster.DeletionTimestamp.IsZero() || !optedIn {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// conflictRequeue is the fixed retry interval after a write conflict.
const conflictRequeue = 100 * time.Millisecond

// clusterGone: a reconcile that started from a stale copy may find its
// Cluster already deleted once an earlier one released the finalizer.
func (r *Reconciler) clusterGone(ctx context.Context, key client.ObjectKey) bool {
	return apierrors.IsNotFound(r.APIReader.Get(ctx, key, &capiv1.Cluster{}))
}

// phase is one step of enrolment. It returns false to stop the pipeline
// when it has recorded why in the member's conditions (waiting on Cluster
// API, a name conflict) — that is not an error.
type phase func(context.Context, *scope) (bool, error)

func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	phases := []phase{
		r.reconcileMemberName,
		r.reconcileMemberCluster,
		r.reconcileTrigger,
		r.reconcileExecutionNamespace,
		r.reconcileIdentity,
		r.reconcileAgent,
		r.reconcileEstimator,
		r.reconcileMemberStatus,
	}
	for _, p := range phases {
		proceed, err := p(ctx, s)
		if apierrors.IsConflict(err) {
			// Another writer (a user, another controller) changed an object
			// enrolment updates: retry soon at a fixed interval rather than on
			// an exponential backoff, so that enrolment latency stays predictable.
			ctrl.LoggerFrom(ctx).V(1).Info("Conflict writing an enrolment object, requeueing", "error", err.Error())
			return ctrl.Result{RequeueAfter: conflictRequeue}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if !proceed {
			return r.result(s), nil
		}
	}
	if s.member != nil && !conditions.IsTrue(s.member, clusterv1alpha1.ConditionEnrolled) {
		r.Recorder.Eventf(s.cluster, s.member, corev1.EventTypeNormal, clusterv1alpha1.EnrolledReason, "Enrol",
			"Enrolled as member %s", s.memberName)
	}
	s.markEnrolled(metav1.ConditionTrue, clusterv1alpha1.EnrolledReason, "member %s is enrolled in %s mode", s.memberName, syncMode(s.member))
	return r.result(s), nil
}

func (r *Reconciler) result(s *scope) ctrl.Result {
	if s.requeueAfter > 0 {
		return ctrl.Result{RequeueAfter: s.requeueAfter}
	}
	return ctrl.Result{RequeueAfter: r.SyncPeriod}
}

// patchMember writes the member's spec and status once per reconcile.
// observedGeneration moves only when the reconcile succeeded. The health
// conditions (Reachable, ControlPlaneAvailable, WorkersAvailable, Ready) are
// controllers/health's.
func (r *Reconciler) patchMember(ctx context.Context, s *scope, succeeded bool) error {
	if s.member == nil || s.memberPatch == nil || s.memberGone {
		return nil
	}
	opts := []patch.Option{patch.WithOwnedConditions{Conditions: ownedConditions}}
	if succeeded {
		opts = append(opts, patch.WithStatusObservedGeneration{})
	}
	err := s.memberPatch.Patch(ctx, s.member, opts...)
	if err != nil {
		return fmt.Errorf("patch MemberCluster %s: %w", s.member.Name, err)
	}
	return nil
}

// ownedConditions are the member conditions enrolment writes; the health
// conditions are controllers/health's.
var ownedConditions = []string{clusterv1alpha1.ConditionEnrolled, clusterv1alpha1.ConditionTerminating}

// optedIn: the Cluster's own label wins ("false" opts out), then its
// namespace's label, then --enrol-all.
func (r *Reconciler) optedIn(ctx context.Context, c *capiv1.Cluster) (bool, error) {
	if v, ok := c.Labels[clusterv1alpha1.EnrolLabel]; ok {
		return v == "true", nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: c.Namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return r.EnrolAll, nil
		}
		return false, fmt.Errorf("read namespace %s of Cluster %s: %w", c.Namespace, c.Name, err)
	}
	if v, ok := ns.Labels[clusterv1alpha1.EnrolLabel]; ok {
		return v == "true", nil
	}
	return r.EnrolAll, nil
}

// uncachedClient reads through the API reader and writes through the client:
// what enrolment writes but does not watch (Secrets, ConfigMaps, RBAC) is not
// worth caching cluster-wide for one read per member and sync period.
type uncachedClient struct {
	client.Client
	reader client.Reader
}

func (u uncachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return u.reader.Get(ctx, key, obj, opts...)
}

func (u uncachedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return u.reader.List(ctx, list, opts...)
}

func (r *Reconciler) uncached() client.Client {
	return uncachedClient{Client: r.Client, reader: r.APIReader}
}

func syncMode(m *clusterv1alpha1.MemberCluster) clusterv1alpha1.SyncMode {
	if m == nil || m.Spec.SyncMode == "" {
		return clusterv1alpha1.Push
	}
	return m.Spec.SyncMode
}
