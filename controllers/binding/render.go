// The render phase (Renderer) renders each ResourceBinding and ClusterResourceBinding
// into Works: one per member of spec.clusters, in the member's execution
// namespace flotilla-es-<member>, holding the template as that member
// receives it — stripped of what the hub's API server set, with the
// member's replica count written in and the OverridePolicies and
// ClusterOverridePolicies applied (internal/overrides).
//
//   - propagateDeps: the ConfigMaps, Secrets, ServiceAccounts and PVCs the
//     template's pod spec references (internal/interpreter.GetDependencies) go into the
//     same Work, before the workload, with overrides applied to each; they
//     leave the member with it. A dependency missing on the hub is skipped
//     and named in the Rendered condition's message.
//   - Envelopes: a template that is an envelope — a labelled ConfigMap or a
//     ClusterResourceEnvelope (internal/envelope) — is replaced in the Work
//     by the objects it carries, after overrides are applied to the
//     envelope itself (so an overrider can customise an embedded manifest
//     per member).
//   - Tenancy: what a ResourceBinding renders is confined to its namespace
//     (internal/tenancy): an object that is cluster-scoped, of a kind the
//     hub does not serve, in another namespace, or a template or dependency
//     whose identity an override changed, is left out of the Work; the rest
//     is written, and the Rendered condition names what was left out and the
//     rule (reason ForbiddenObject). ClusterResourceBindings are not confined.
//   - Takeover: the Works' conflictResolution is decided here, in one place
//     (tenancy.ConflictResolution): the binding's Overwrite only from a
//     ClusterPropagationPolicy, a ClusterResourceBinding or a namespace
//     labelled policy.flotilla.io/allow-overwrite=true; else Abort, with the
//     reason in the Work's work.flotilla.io/overwrite-refused annotation.
//   - Suspension: spec.suspension.dispatching, or a member named in
//     dispatchingOnClusters, sets the Work's spec.suspendDispatching.
//   - A member no longer in spec.clusters loses its Work, unless a
//     gracefulEvictionTask names it: then its Work stays as it is until the
//     task is removed.
//   - Removals are paced per member (removal.go, internal/removal): past a
//     share of a member's Works per window, Works wait their turn and the
//     MemberCluster says so (RemovalsPaced).
//
// The binding's Rendered condition says whether every member's Work is
// rendered; failures are also events on the template.

package binding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/federatednamespace"
	"github.com/flotilla-io/flotilla/internal/envelope"
	"github.com/flotilla-io/flotilla/internal/eviction"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/membernames"
	"github.com/flotilla-io/flotilla/internal/overrides"
	"github.com/flotilla-io/flotilla/internal/removal"
	"github.com/flotilla-io/flotilla/internal/statusapply"
	"github.com/flotilla-io/flotilla/internal/tenancy"
)

// memberIndex indexes bindings by the members they target or keep a Work
// on (spec.clusters and gracefulEvictionTasks).
const memberIndex = "flotilla.io/binding-members"

// executionNamespaceRetry is how soon a Work whose execution namespace does
// not exist yet (the member is still enrolling) is tried again.
const executionNamespaceRetry = 10 * time.Second

// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=overridepolicies;clusteroverridepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Renderer renders bindings into Works.
type Renderer struct {
	// Client is the manager's client.
	Client client.Client
	// APIReader reads templates and their dependencies from the API server:
	// the hub does not cache every kind a template can be.
	APIReader client.Reader
	// Recorder records events on templates.
	Recorder events.EventRecorder
	// Templates hands over the templates the detector has just read, so
	// that a new binding's template is not read twice; nil reads every
	// template from the API server.
	Templates *RecentTemplates
	// RESTMapper tells which kinds are namespaced, for the tenancy rule;
	// the manager's when not set.
	RESTMapper meta.RESTMapper
	// Quota checks and charges what ResourceBindings render against their
	// namespaces' FederatedResourceQuotas (quota.go); nil checks nothing.
	Quota RenderedQuota
	// QuotaWakeups are sources of the ResourceBinding controller that
	// re-queue bindings refused for quota when quota frees.
	QuotaWakeups []source.TypedSource[reconcile.Request]
	// Removals paces the deletion of Works whose objects leave their
	// member (removal.go); nil deletes at once.
	Removals *removal.Limiter
	// Interpreter revises replicas and finds dependencies; nil knows the
	// built-in kinds only.
	Interpreter *interpreter.Interpreter
	// KindChanged, when set, carries kinds whose bindings are to be rendered
	// again (their interpreter customizations changed), one channel per
	// binding kind.
	KindChanged map[string]<-chan event.TypedGenericEvent[schema.GroupVersionKind]

	deps dependencyIndex
	// written is what this phase last wrote of each binding's status.
	written statusapply.LastWrites[renderedFields]
}

// SetupWithManager registers one controller per binding kind.
func (r *Renderer) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return errors.New("binding: Client, APIReader and Recorder must be set")
	}
	if r.RESTMapper == nil {
		r.RESTMapper = mgr.GetRESTMapper()
	}
	if err := IndexWorksByBinding(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	for _, kind := range []string{KindResourceBinding, KindClusterResourceBinding} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, NewBinding(kind), memberIndex, indexMembers); err != nil {
			return fmt.Errorf("index %s by member: %w", kind, err)
		}
		b := ctrl.NewControllerManagedBy(mgr).
			Named("works-"+strings.ToLower(kind)).
			For(NewBinding(kind), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted()))).
			// A Work changed by someone else is written back, one deleted is
			// made again; the creation of its own Works is no news.
			Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(WorkToBinding(kind)),
				builder.WithPredicates(predicate.And[client.Object](notCreated(),
					predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleted())))).
			Watches(&policyv1alpha1.ClusterOverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.allBindings(kind)),
				builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOnMember(kind)),
				builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
			WithOptions(options)
		if kind == KindResourceBinding {
			b = b.Watches(&policyv1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.allBindings(kind)),
				builder.WithPredicates(predicate.GenerationChangedPredicate{})).
				// The allow-overwrite mark decides the Works' conflictResolution.
				Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.bindingsInNamespace),
					builder.WithPredicates(predicate.LabelChangedPredicate{}))
			for _, src := range r.QuotaWakeups {
				b = b.WatchesRawSource(src)
			}
		}
		if ch := r.KindChanged[kind]; ch != nil {
			b = b.WatchesRawSource(source.TypedChannel(ch, handler.TypedEnqueueRequestsFromMapFunc(r.bindingsOfKind(kind))))
		}
		for _, depKind := range interpreter.DependencyKinds {
			meta := &metav1.PartialObjectMetadata{}
			meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(depKind))
			b = b.WatchesMetadata(meta, handler.EnqueueRequestsFromMapFunc(r.dependentsOf(kind, depKind)),
				builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}))
		}
		kind := kind
		if err := b.Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			return r.Reconcile(ctx, kind, req)
		})); err != nil {
			return fmt.Errorf("works controller for %s: %w", kind, err)
		}
	}
	return nil
}

func indexMembers(obj client.Object) []string {
	b, ok := obj.(workv1alpha1.Binding)
	if !ok {
		return nil
	}
	var members []string
	for _, c := range b.BindingSpec().Clusters {
		members = append(members, c.Name)
	}
	for _, t := range b.BindingSpec().GracefulEvictionTasks {
		members = append(members, t.FromCluster)
	}
	slices.Sort(members)
	return slices.Compact(members)
}

// Reconcile renders one binding's Works, or removes them when the binding
// is being deleted; the Rendered condition is written in one request.
func (r *Renderer) Reconcile(ctx context.Context, kind string, req ctrl.Request) (res ctrl.Result, reterr error) {
	b := NewBinding(kind)
	key := bindingKey{Kind: kind, ObjectKey: req.NamespacedName}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.deps.Set(key, nil)
			r.written.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// The binding as this phase last wrote it, if the cache lags that write.
	if last, ok := r.written.Get(req.NamespacedName, b.GetUID()); ok {
		setRendered(b, last)
	}
	if b.GetDeletionTimestamp().IsZero() {
		if _, err := finalizers.EnsureFinalizer(ctx, r.Client, b, workv1alpha1.BindingFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	previous := conditions.Get(b, workv1alpha1.ConditionRendered).DeepCopy() // Get points into the list Set changes
	was := renderedOf(b)
	defer func() {
		r.reportFailure(b, previous)
		if err := r.writeStatus(ctx, kind, was, b); apierrors.IsConflict(err) && reterr == nil {
			res = ctrl.Result{RequeueAfter: conflictRequeue}
		} else if err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, fmt.Errorf("write the status of %s %s: %w", kind, req.NamespacedName, err)})
		}
	}()

	if !b.GetDeletionTimestamp().IsZero() {
		return r.reconcileDelete(ctx, key, b)
	}
	return r.reconcileNormal(ctx, key, b)
}

// reconcileDelete deletes the binding's Works and lets the binding go once
// they are gone (their own finalizers first remove the objects from members).
// A binding goes when its template does (deleted by the user, or with its
// hub namespace) or when someone deletes it: a removal asked for, made at
// once as in Karmada, never paced (removeAskedFor).
func (r *Renderer) reconcileDelete(ctx context.Context, key bindingKey, b workv1alpha1.Binding) (ctrl.Result, error) {
	works, err := r.worksOf(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	for i := range works {
		if err := r.removeAskedFor(ctx, &works[i]); err != nil {
			return ctrl.Result{}, err
		}
	}
	if len(works) > 0 {
		// The Works' deletions bring the binding back here.
		return ctrl.Result{}, nil
	}
	before := b.DeepCopyObject().(client.Object)
	if controllerutil.RemoveFinalizer(b, workv1alpha1.BindingFinalizer) {
		if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	r.deps.Set(key, nil)
	return ctrl.Result{}, nil
}

// RendererFieldManager is the field manager of the render phase's status
// writes.
const RendererFieldManager = "flotilla-renderer"

// renderedFields are the status fields the render phase owns.
type renderedFields struct {
	// RenderedUsage is a ResourceBinding's (quota.go), written empty rather
	// than left out; a ClusterResourceBinding has none.
	RenderedUsage corev1.ResourceList `json:"renderedUsage"`
	Conditions    []metav1.Condition  `json:"conditions"`
}

func renderedOf(b workv1alpha1.Binding) renderedFields {
	f := renderedFields{RenderedUsage: corev1.ResourceList{}, Conditions: []metav1.Condition{}}
	if rb, ok := b.(*workv1alpha1.ResourceBinding); ok {
		for name, q := range rb.Status.RenderedUsage {
			f.RenderedUsage[name] = q.DeepCopy()
		}
	}
	if c := conditions.Get(b, workv1alpha1.ConditionRendered); c != nil {
		f.Conditions = append(f.Conditions, *c)
	}
	return f
}

// setRendered puts what the render phase last wrote into b's status.
func setRendered(b workv1alpha1.Binding, f renderedFields) {
	if rb, ok := b.(*workv1alpha1.ResourceBinding); ok {
		rb.Status.RenderedUsage = nil
		if len(f.RenderedUsage) > 0 {
			rb.Status.RenderedUsage = f.RenderedUsage.DeepCopy()
		}
	}
	// As written: conditions.Set would stamp the cache's generation on it.
	s := b.BindingStatus()
	kept := s.Conditions[:0:0]
	for _, c := range s.Conditions {
		if c.Type != workv1alpha1.ConditionRendered {
			kept = append(kept, c)
		}
	}
	for _, c := range f.Conditions {
		kept = append(kept, *c.DeepCopy())
	}
	s.Conditions = kept
}

// writeStatus writes what the render phase owns of the binding's status in
// one request, and none when it did not change. Without the optimistic
// lock, as the aggregate phase writes (docs/design.md): the phase makes
// its fields from the binding's spec and its Works in the cache, which
// only moves forward, one reconcile per binding at a time, and starts from
// its own last write while the cache lags it; the lock only refused it
// whenever another phase had written the binding since the cache's copy
// (~140 refusals in a burst of 100 Deployments × 3 members, each followed
// by a whole rendering again).
func (r *Renderer) writeStatus(ctx context.Context, kind string, was renderedFields, b workv1alpha1.Binding) error {
	now := renderedOf(b)
	if apiequality.Semantic.DeepEqual(was, now) {
		return nil
	}
	key := client.ObjectKeyFromObject(b)
	if err := statusapply.Apply(ctx, r.Client, workv1alpha1.GroupVersion.WithKind(kind), key, "", RendererFieldManager, now); err != nil {
		// A binding whose last finalizer went is gone: nothing to say on it.
		return client.IgnoreNotFound(err)
	}
	r.written.Remember(key, b.GetUID(), now)
	return nil
}

// minPositive is the smaller of two waits, 0 meaning none.
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// rendering is one reconciliation of a binding's Works.
type rendering struct {
	key      bindingKey
	binding  workv1alpha1.Binding
	template *unstructured.Unstructured
	// deps are the template's dependencies read from the hub (propagateDeps).
	deps []*unstructured.Unstructured
	// missing names dependencies the hub does not have.
	missing []string
	// clusterPolicies and policies are the override policies that may apply.
	clusterPolicies []policyv1alpha1.ClusterOverridePolicy
	policies        []policyv1alpha1.OverridePolicy
	// takeover is the conflict resolution every Work of the binding applies
	// (tenancy.ConflictResolution).
	takeover tenancy.Takeover
	// failures per member, reported in the Rendered condition.
	failures []failure
	requeue  time.Duration
	// unknownMembers names override rules whose targetCluster names a
	// cluster that is not a member (membernames), for the Rendered message.
	unknownMembers []string
	// paced names members whose stale Work waits for its removal turn.
	paced []string
}

type failure struct {
	member, reason, message string
}

func (s *rendering) fail(member, reason, format string, args ...any) {
	s.failures = append(s.failures, failure{member: member, reason: reason, message: fmt.Sprintf(format, args...)})
}

func (r *Renderer) reconcileNormal(ctx context.Context, key bindingKey, b workv1alpha1.Binding) (ctrl.Result, error) {
	s := &rendering{key: key, binding: b}
	phases := []func(context.Context, *rendering) (bool, error){
		r.holdUnfederated,
		r.readTemplate,
		r.readDependencies,
		r.readOverridePolicies,
		r.decideTakeover,
		r.findUnknownMembers,
		r.writeWorks,
		r.removeStaleWorks,
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
	if c := renderedCondition(s); !neverPlaced(b, c, workv1alpha1.ConditionRendered) {
		conditions.Set(b, c)
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// holdUnfederated keeps a ResourceBinding's Works as they are while its
// namespace is not federated: the detector no longer follows the template
// there, so rendering the template as it is now would push changes the
// namespace's owner took out of the fleet.
func (r *Renderer) holdUnfederated(ctx context.Context, s *rendering) (bool, error) {
	if s.key.Kind != KindResourceBinding {
		return true, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.binding.GetNamespace()}, ns); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read namespace %s: %w", s.binding.GetNamespace(), err)
	}
	if federatednamespace.Federated(ns) {
		return true, nil
	}
	s.fail("", workv1alpha1.BindingReasonNamespaceNotFederated,
		"namespace %s is not federated: the Works are kept as they are and template changes are not propagated until it is labelled %s=true again",
		s.binding.GetNamespace(), policyv1alpha1.FederatedLabel)
	return false, nil
}

// readTemplate reads the template the binding names, from the API server.
func (r *Renderer) readTemplate(ctx context.Context, s *rendering) (bool, error) {
	res := s.binding.BindingSpec().Resource
	if s.key.Kind == KindResourceBinding {
		// Admission refuses another namespace (webhooks.ResourceBinding); a
		// binding written around it is not trusted either.
		switch res.Namespace {
		case s.binding.GetNamespace():
		case "":
			res.Namespace = s.binding.GetNamespace()
		default:
			s.fail("", workv1alpha1.BindingReasonTemplateOutsideNamespace,
				"spec.resource names %s %s: a ResourceBinding renders only templates of its own namespace %s; nothing is rendered",
				res.Kind, objectName(res.Namespace, res.Name), s.binding.GetNamespace())
			return false, nil
		}
	}
	if t, ok := r.Templates.Get(res, s.binding.GetAnnotations()[workv1alpha1.TemplateContentAnnotation]); ok {
		s.template = t
		return true, nil
	}
	t := &unstructured.Unstructured{}
	t.SetAPIVersion(res.APIVersion)
	t.SetKind(res.Kind)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: res.Namespace, Name: res.Name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			// The detector deletes the binding of a deleted template; until
			// then the Works stay as they are.
			s.fail("", workv1alpha1.BindingReasonTemplateNotFound, "%s %s not found", res.Kind, objectName(res.Namespace, res.Name))
			return false, nil
		}
		return false, fmt.Errorf("read template %s %s: %w", res.Kind, objectName(res.Namespace, res.Name), err)
	}
	s.template = t
	return true, nil
}

// readDependencies reads the objects the template's Pods reference, when
// the binding propagates dependencies.
func (r *Renderer) readDependencies(ctx context.Context, s *rendering) (bool, error) {
	var index []dependent
	defer func() { r.deps.Set(s.key, index) }()
	if !s.binding.BindingSpec().PropagateDeps {
		return true, nil
	}
	refs, err := r.Interpreter.GetDependencies(ctx, s.template)
	if err != nil {
		s.fail("", reasonOf(err, workv1alpha1.BindingReasonRenderFailed), "%v", err)
		return false, nil
	}
	for _, ref := range refs {
		index = append(index, dependent{Kind: ref.Kind, Namespace: s.template.GetNamespace(), Name: ref.Name})
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.Kind))
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.template.GetNamespace(), Name: ref.Name}, dep)
		if apierrors.IsNotFound(err) {
			s.missing = append(s.missing, ref.Kind+" "+ref.Name)
			continue
		}
		if err != nil {
			return false, fmt.Errorf("read dependency %s %s/%s: %w", ref.Kind, s.template.GetNamespace(), ref.Name, err)
		}
		// A token Secret belongs to the hub's ServiceAccount; the member mints its own.
		if t, _, _ := unstructured.NestedString(dep.Object, "type"); t == string(corev1.SecretTypeServiceAccountToken) {
			continue
		}
		s.deps = append(s.deps, dep)
	}
	return true, nil
}

// readOverridePolicies lists the override policies that may apply to the
// template: every ClusterOverridePolicy and the OverridePolicies of its namespace.
func (r *Renderer) readOverridePolicies(ctx context.Context, s *rendering) (bool, error) {
	cops := &policyv1alpha1.ClusterOverridePolicyList{}
	if err := r.Client.List(ctx, cops); err != nil {
		return false, fmt.Errorf("list ClusterOverridePolicies: %w", err)
	}
	s.clusterPolicies = cops.Items
	if ns := s.template.GetNamespace(); ns != "" {
		ops := &policyv1alpha1.OverridePolicyList{}
		if err := r.Client.List(ctx, ops, client.InNamespace(ns)); err != nil {
			return false, fmt.Errorf("list OverridePolicies of %s: %w", ns, err)
		}
		s.policies = ops.Items
	}
	return true, nil
}

// decideTakeover decides whether the binding's Works may take over objects
// Flotilla did not create in members: the one place where a policy's
// conflictResolution becomes a Work's (tenancy.ConflictResolution).
func (r *Renderer) decideTakeover(ctx context.Context, s *rendering) (bool, error) {
	b := s.binding
	o := tenancy.Origin{
		Requested:     b.BindingSpec().ConflictResolution,
		ClusterScoped: s.key.Kind == KindClusterResourceBinding,
		Labels:        b.GetLabels(),
		Annotations:   b.GetAnnotations(),
		Namespace:     b.GetNamespace(),
	}
	if !o.ClusterScoped && o.Requested == policyv1alpha1.ConflictOverwrite {
		ns := &corev1.Namespace{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: b.GetNamespace()}, ns)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("read namespace %s: %w", b.GetNamespace(), err)
		}
		o.NamespaceLabels = ns.Labels
	}
	s.takeover = tenancy.ConflictResolution(o)
	return true, nil
}

// writeWorks renders and writes the Work of every member of spec.clusters.
// A member that cannot be rendered, or whose Work would pass a quota
// (chargeQuota), keeps its previous Work.
func (r *Renderer) writeWorks(ctx context.Context, s *rendering) (bool, error) {
	spec := s.binding.BindingSpec()
	rendered := map[string][]workv1alpha1.Manifest{}
	for _, target := range spec.Clusters {
		manifests, reason, err := r.render(ctx, s, target)
		if err != nil {
			if reason == "" {
				return false, err
			}
			s.fail(target.Name, reason, "%v", err)
			continue
		}
		rendered[target.Name] = manifests
	}
	refused, err := r.chargeQuota(ctx, s, rendered)
	if err != nil {
		return false, err
	}
	for _, target := range spec.Clusters {
		manifests, ok := rendered[target.Name]
		if !ok || refused[target.Name] {
			continue
		}
		if err := r.writeWork(ctx, s, target.Name, manifests); err != nil {
			if apierrors.IsNotFound(err) {
				s.fail(target.Name, workv1alpha1.BindingReasonMemberNotFound, "execution namespace %s does not exist: the member is not enrolled (yet)",
					clusterv1alpha1.ExecutionNamespace(target.Name))
				s.requeue = executionNamespaceRetry
				continue
			}
			if tooLarge(err) {
				s.fail(target.Name, workv1alpha1.BindingReasonWorkTooLarge, "the hub refused the Work for member %s as too large: %v", target.Name, err)
				continue
			}
			return false, fmt.Errorf("write the Work of member %s: %w", target.Name, err)
		}
	}
	return true, nil
}

// render is the manifests of one member's Work. A user-facing failure
// comes with its reason; an error without reason is transient.
func (r *Renderer) render(ctx context.Context, s *rendering, target workv1alpha1.TargetCluster) ([]workv1alpha1.Manifest, string, error) {
	member := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: target.Name}, member); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, workv1alpha1.BindingReasonMemberNotFound, fmt.Errorf("MemberCluster %s not found", target.Name)
		}
		return nil, "", fmt.Errorf("read MemberCluster %s: %w", target.Name, err)
	}
	var objs []*unstructured.Unstructured
	for _, dep := range s.deps {
		out, err := overrides.Apply(dep, member, s.clusterPolicies, s.policies)
		if err != nil {
			return nil, workv1alpha1.BindingReasonOverrideFailed, fmt.Errorf("%s %s: %w", dep.GetKind(), dep.GetName(), err)
		}
		obj := Strip(out.Object)
		if ok, err := r.confine(ctx, s, target.Name, dep, obj); err != nil {
			return nil, "", err
		} else if ok {
			objs = append(objs, obj)
		}
	}
	out, err := overrides.Apply(s.template, member, s.clusterPolicies, s.policies)
	if err != nil {
		return nil, workv1alpha1.BindingReasonOverrideFailed, err
	}
	workload := Strip(out.Object)
	ok, err := r.confine(ctx, s, target.Name, s.template, workload)
	switch {
	case err != nil:
		return nil, "", err
	case !ok:
		// Left out; its dependencies are still rendered.
	case envelope.Is(workload):
		contents, err := envelope.Unwrap(workload)
		if err != nil {
			return nil, workv1alpha1.BindingReasonInvalidEnvelope, err
		}
		for _, obj := range contents {
			if ok, err := r.confine(ctx, s, target.Name, nil, obj); err != nil {
				return nil, "", err
			} else if ok {
				objs = append(objs, obj)
			}
		}
	default:
		if _, err := r.Interpreter.ReviseReplica(ctx, workload, target.Replicas); err != nil {
			return nil, reasonOf(err, workv1alpha1.BindingReasonRenderFailed), err
		}
		// A copy replacing one application failover evicted carries the
		// state its statePreservation rules read from the failed copy.
		if preserved := eviction.PreservedLabelsFor(s.binding.BindingSpec(), target.Name); len(preserved) > 0 {
			labels := workload.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			maps.Copy(labels, preserved)
			workload.SetLabels(labels)
		}
		objs = append(objs, workload)
	}
	manifests, err := manifestsOf(objs)
	if err != nil {
		return nil, workv1alpha1.BindingReasonRenderFailed, err
	}
	if err := checkSize(target.Name, manifests); err != nil {
		return nil, workv1alpha1.BindingReasonWorkTooLarge, err
	}
	return manifests, "", nil
}

// reasonOf is InterpreterFailed for a customization's script failing,
// otherwise reason.
func reasonOf(err error, reason string) string {
	var script *interpreter.ScriptError
	if errors.As(err, &script) {
		return workv1alpha1.BindingReasonInterpreterFailed
	}
	return reason
}

// confine applies the tenancy rules to obj, about to go into member's Work,
// after overrides: for a ResourceBinding, the namespace rule
// (tenancy.Confine); for every binding, the traffic rule
// (tenancy.GrabsTraffic: no Service with externalIPs unless its hub
// namespace allows them). An object a rule forbids is left out and named in
// the Rendered condition (reason ForbiddenObject). hub is obj as the hub
// holds it, before overrides, whose identity obj must keep; nil for an
// envelope's contents. The error is transient (the scope or a namespace
// could not be read).
func (r *Renderer) confine(ctx context.Context, s *rendering, member string, hub, obj *unstructured.Unstructured) (bool, error) {
	var err error
	if s.key.Kind == KindResourceBinding {
		var keep *tenancy.Identity
		if hub != nil {
			id := tenancy.IdentityOf(hub)
			keep = &id
		}
		err = tenancy.Confine(r.RESTMapper, s.binding.GetNamespace(), keep, obj)
	}
	if err == nil {
		err = tenancy.GrabsTraffic(obj, func(name string) (map[string]string, error) {
			ns := &corev1.Namespace{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("read namespace %s: %w", name, err)
			}
			return ns.Labels, nil
		})
	}
	var v *tenancy.Violation
	if errors.As(err, &v) {
		s.fail(member, workv1alpha1.BindingReasonForbiddenObject, "%v", v)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("member %s: %w", member, err)
	}
	return true, nil
}

// writeWork creates or updates one member's Work.
func (r *Renderer) writeWork(ctx context.Context, s *rendering, member string, manifests []workv1alpha1.Manifest) error {
	b, spec := s.binding, s.binding.BindingSpec()
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace(member),
		Name:      WorkName(s.key.Kind, b.GetNamespace(), b.GetName()),
	}}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, work, func() error {
		if work.ResourceVersion == "" && r.pushedTo(ctx, member) {
			// Created holding the execution controller's finalizer, which
			// it would otherwise add in a request of its own before its
			// first apply. A Pull member's agent adds its own: a Work of a
			// member whose agent never came is deleted at once.
			controllerutil.AddFinalizer(work, workv1alpha1.ExecutionFinalizer)
		}
		if work.Labels == nil {
			work.Labels = map[string]string{}
		}
		work.Labels[workv1alpha1.BindingPermanentIDLabel] = string(b.GetUID())
		work.Labels[clusterv1alpha1.MemberLabel] = member
		if work.Annotations == nil {
			work.Annotations = map[string]string{}
		}
		work.Annotations[workv1alpha1.BindingKindAnnotation] = s.key.Kind
		work.Annotations[workv1alpha1.BindingNamespaceAnnotation] = b.GetNamespace()
		work.Annotations[workv1alpha1.BindingNameAnnotation] = b.GetName()
		if !apiequality.Semantic.DeepEqual(work.Spec.Workload.Manifests, manifests) {
			work.Annotations[workv1alpha1.RenderedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		}
		work.Spec.Workload.Manifests = manifests
		work.Spec.SuspendDispatching = ptr.To(dispatchSuspended(spec.Suspension, member))
		work.Spec.PreserveResourcesOnDeletion = ptr.To(ptr.Deref(spec.PreserveResourcesOnDeletion, false))
		work.Spec.ConflictResolution = s.takeover.Resolution
		if s.takeover.Refused != "" {
			work.Annotations[workv1alpha1.OverwriteRefusedAnnotation] = s.takeover.Refused
		} else {
			delete(work.Annotations, workv1alpha1.OverwriteRefusedAnnotation)
		}
		return nil
	})
	return err
}

// pushedTo says whether the hub applies the member's Works (Push, the
// default), as far as the cache knows.
func (r *Renderer) pushedTo(ctx context.Context, member string) bool {
	m := &clusterv1alpha1.MemberCluster{}
	return r.Client.Get(ctx, client.ObjectKey{Name: member}, m) == nil && m.Spec.SyncMode != clusterv1alpha1.Pull
}

// removeStaleWorks deletes the Works of members the binding no longer
// targets, except those a graceful eviction task still holds.
func (r *Renderer) removeStaleWorks(ctx context.Context, s *rendering) (bool, error) {
	keep := map[string]bool{}
	for _, c := range s.binding.BindingSpec().Clusters {
		keep[c.Name] = true
	}
	for _, t := range s.binding.BindingSpec().GracefulEvictionTasks {
		keep[t.FromCluster] = true
	}
	works, err := r.worksOf(ctx, s.binding)
	if err != nil {
		return false, err
	}
	for i := range works {
		member := works[i].Labels[clusterv1alpha1.MemberLabel]
		if keep[member] {
			r.keepWork(ctx, member, &works[i])
			continue
		}
		wait, err := r.removeWork(ctx, &works[i], removalTrigger(s.binding, member))
		if err != nil {
			return false, err
		}
		if wait > 0 {
			s.paced = append(s.paced, member)
			s.requeue = minPositive(s.requeue, wait)
		}
	}
	return true, nil
}

func (r *Renderer) worksOf(ctx context.Context, b workv1alpha1.Binding) ([]workv1alpha1.Work, error) {
	list, err := listWorksOf(ctx, r.Client, string(b.GetUID()))
	if err != nil {
		return nil, fmt.Errorf("list the Works of %s: %w", objectName(b.GetNamespace(), b.GetName()), err)
	}
	return list.Items, nil
}

func (r *Renderer) deleteWork(ctx context.Context, w *workv1alpha1.Work) error {
	if !w.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Work %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// findUnknownMembers notes the override rules that apply to the template
// and name clusters that are not members: a misspelt name otherwise only
// shows as an override that never applies.
func (r *Renderer) findUnknownMembers(ctx context.Context, s *rendering) (bool, error) {
	selected, err := overrides.Selecting(s.template, s.clusterPolicies, s.policies)
	if err != nil || len(selected) == 0 {
		return true, nil // a policy that cannot select is the override step's to report
	}
	members := &clusterv1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, members); err != nil {
		return false, fmt.Errorf("list MemberClusters: %w", err)
	}
	names := make([]string, len(members.Items))
	for i := range members.Items {
		names[i] = members.Items[i].Name
	}
	for _, p := range selected {
		if unknown := membernames.Message(membernames.InOverride(p.Spec, membernames.Set(names))); unknown != "" {
			s.unknownMembers = append(s.unknownMembers, p.Ref.String()+": "+unknown)
		}
	}
	return true, nil
}

// renderedCondition summarises a rendering: True naming the members, or
// False with the first failure's reason and every failure's message.
func renderedCondition(s *rendering) metav1.Condition {
	c := metav1.Condition{Type: workv1alpha1.ConditionRendered, ObservedGeneration: s.binding.GetGeneration()}
	spec := s.binding.BindingSpec()
	if len(s.failures) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, s.failures[0].reason
		var parts []string
		for _, f := range s.failures {
			if f.member == "" {
				parts = append(parts, f.message)
			} else {
				parts = append(parts, "member "+f.member+": "+f.message)
			}
		}
		c.Message = strings.Join(append(parts, s.unknownMembers...), "; ")
		return c
	}
	if len(spec.Clusters) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1alpha1.BindingReasonNotScheduled, "not scheduled to any member yet"
		return c
	}
	var members []string
	for _, t := range spec.Clusters {
		members = append(members, t.Name)
	}
	c.Status, c.Reason = metav1.ConditionTrue, workv1alpha1.BindingReasonRendered
	c.Message = "rendered the Works of " + strings.Join(members, ", ")
	if len(s.missing) > 0 {
		c.Message += "; dependencies not found on the hub, not propagated: " + strings.Join(s.missing, ", ")
	}
	for _, u := range s.unknownMembers {
		c.Message += "; " + u
	}
	if len(s.paced) > 0 {
		c.Message += "; " + pacedNote(s.paced)
	}
	return c
}

// reportFailure records an event on the template when rendering newly
// fails, or fails differently.
func (r *Renderer) reportFailure(b workv1alpha1.Binding, previous *metav1.Condition) {
	cur := conditions.Get(b, workv1alpha1.ConditionRendered)
	if cur == nil || cur.Status != metav1.ConditionFalse || cur.Reason == workv1alpha1.BindingReasonNotScheduled {
		return
	}
	if previous != nil && previous.Status == cur.Status && previous.Reason == cur.Reason && previous.Message == cur.Message {
		return
	}
	var regarding runtime.Object = TemplateRef(b)
	if cur.Reason == workv1alpha1.BindingReasonTemplateOutsideNamespace {
		regarding = b // the template is another namespace's business, and so would be the event
	}
	r.Recorder.Eventf(regarding, b, corev1.EventTypeWarning, cur.Reason, "RenderWorks", "%s", eventNote(cur.Message))
}

// maxEventNote is the longest note events.k8s.io/v1 accepts.
const maxEventNote = 1024

// eventNote cuts a message to fit an event's note; the binding's condition
// keeps the whole of it.
func eventNote(message string) string {
	if len(message) <= maxEventNote {
		return message
	}
	const more = "… (the binding's Rendered condition has the rest)"
	cut := maxEventNote - len(more)
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + more
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// allBindings maps an override policy to the bindings it may concern:
// those of its namespace (an OverridePolicy) or all (a ClusterOverridePolicy).
func (r *Renderer) allBindings(kind string) handler.MapFunc {
	return func(ctx context.Context, policy client.Object) []reconcile.Request {
		return r.listBindings(ctx, kind, client.InNamespace(policy.GetNamespace()))
	}
}

// bindingsOfKind maps a template kind to the bindings of its templates.
func (r *Renderer) bindingsOfKind(kind string) handler.TypedMapFunc[schema.GroupVersionKind, reconcile.Request] {
	return func(ctx context.Context, gvk schema.GroupVersionKind) []reconcile.Request {
		var out []reconcile.Request
		for _, req := range r.listBindings(ctx, kind) {
			b := NewBinding(kind)
			if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
				continue
			}
			if res := b.BindingSpec().Resource; res.APIVersion == gvk.GroupVersion().String() && res.Kind == gvk.Kind {
				out = append(out, req)
			}
		}
		return out
	}
}

// bindingsInNamespace maps a hub Namespace to its ResourceBindings: its
// policy.flotilla.io/allow-overwrite label decides their Works'
// conflictResolution, its federated label whether they are rendered.
func (r *Renderer) bindingsInNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.listBindings(ctx, KindResourceBinding, client.InNamespace(ns.GetName()))
}

// bindingsOnMember maps a MemberCluster to the bindings with a Work on it:
// its labels and fields select override rules.
func (r *Renderer) bindingsOnMember(kind string) handler.MapFunc {
	return func(ctx context.Context, member client.Object) []reconcile.Request {
		return r.listBindings(ctx, kind, client.MatchingFields{memberIndex: member.GetName()})
	}
}

// dependentsOf maps a ConfigMap, Secret, ServiceAccount or PVC to the
// bindings whose Works carry it.
func (r *Renderer) dependentsOf(kind, depKind string) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, b := range r.deps.Dependents(dependent{Kind: depKind, Namespace: obj.GetNamespace(), Name: obj.GetName()}) {
			if b.Kind == kind {
				out = append(out, reconcile.Request{NamespacedName: b.ObjectKey})
			}
		}
		return out
	}
}

func (r *Renderer) listBindings(ctx context.Context, kind string, opts ...client.ListOption) []reconcile.Request {
	return Requests(ctx, r.Client, kind, opts...)
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

// notCreated passes all but creations.
func notCreated() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}
}

// deleted passes deletions only.
func deleted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
