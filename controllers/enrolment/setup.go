package enrolment

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/predicates"
	"sigs.k8s.io/cluster-api/util/secret"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/pacing"
)

// SetupWithManager registers the enrolment controller. It reconciles CAPI
// Clusters and maps to them what else decides a member's fate: its
// Namespace's opt-in label, its kubeconfig Secret (appearance, rotation), its
// hub identity Secret (deletion), its MemberCluster (spec changes, deletion),
// its Works (deletion, while the member drains) and its add-on
// ClusterResourceSets (deletion: they are put back). Secrets and Works are
// watched as metadata only: the hub does not cache their contents.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	r.Options.defaults()
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("flotilla-enrolment")
	}
	if options.MaxConcurrentReconciles == 0 {
		// A member that does not answer holds a worker for the member timeout.
		options.MaxConcurrentReconciles = 5
	}
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &clusterv1alpha1.MemberCluster{}, indexClusterRef, func(o client.Object) []string {
		ref := o.(*clusterv1alpha1.MemberCluster).Spec.ClusterRef
		return []string{clusterRefKey(ref.Namespace, ref.Name)}
	}); err != nil {
		return fmt.Errorf("index MemberClusters by Cluster: %w", err)
	}
	if err := indexer.IndexField(ctx, &capiv1.Cluster{}, indexClusterName, func(o client.Object) []string {
		return []string{o.GetName()}
	}); err != nil {
		return fmt.Errorf("index Clusters by name: %w", err)
	}

	log := ctrl.LoggerFrom(ctx).WithValues("controller", "enrolment")
	scheme := mgr.GetScheme()
	return ctrl.NewControllerManagedBy(mgr).
		Named("enrolment").
		For(&capiv1.Cluster{}, builder.WithPredicates(predicates.All(scheme, log,
			predicates.ResourceIsChanged(scheme, log),
			r.clusterConcernsEnrolment(log),
			predicates.Any(scheme, log, clusterNotPaused(), predicates.ClusterPausedTransitions(scheme, log)),
		))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToClusters),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToCluster),
			builder.WithPredicates(secretConcernsEnrolment())).
		Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(memberToCluster),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletions(), apiEnablementsChanged()))).
		// Whole Works, from the informer the propagation controllers share:
		// the agent's grant is computed from that same cache
		// (agentrights.go), which holds the Work whose event this is. A
		// burst of a Pull member's new Works is one reconcile a second
		// (agentGrantWindow); a Work's deletion is seen at once.
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(r.workToCluster),
			builder.WithPredicates(deletions())).
		Watches(&workv1alpha1.Work{}, pacing.EnqueueCoalesced(r.workToCluster, agentGrantWindow),
			builder.WithPredicates(r.pullMemberWorkChanged())).
		Watches(&addonsv1.ClusterResourceSet{}, handler.EnqueueRequestsFromMapFunc(r.addonToClusters),
			builder.WithPredicates(deletions())).
		WithOptions(options).
		Complete(r)
}

// clusterConcernsEnrolment lets through Clusters that opt in, and those
// enrolment holds (finalizer), so that opting out is seen.
func (r *Reconciler) clusterConcernsEnrolment(log logr.Logger) predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		c, ok := o.(*capiv1.Cluster)
		if !ok {
			return false
		}
		if controllerutil.ContainsFinalizer(c, clusterv1alpha1.ClusterFinalizer) {
			return true
		}
		in, err := r.optedIn(context.Background(), c)
		if err != nil {
			log.V(4).Info("Cannot tell whether the Cluster opts in; reconciling it", "cluster", client.ObjectKeyFromObject(c), "error", err.Error())
			return true
		}
		return in
	})
}

// clusterNotPaused: a paused Cluster's events are dropped; its pause
// transitions still pass (ClusterPausedTransitions).
func clusterNotPaused() predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		c, ok := o.(*capiv1.Cluster)
		return ok && !annotations.IsPaused(c, c)
	})
}

// secretConcernsEnrolment: CAPI kubeconfig Secrets on any change, hub
// identity Secrets when deleted (enrolment's own writes need no reaction).
func secretConcernsEnrolment() predicate.Funcs {
	isKubeconfig := func(o client.Object) bool {
		return o.GetLabels()[capiv1.ClusterNameLabel] != "" && strings.HasSuffix(o.GetName(), "-"+string(secret.Kubeconfig))
	}
	isIdentity := func(o client.Object) bool {
		return o.GetNamespace() == clusterv1alpha1.SystemNamespace && o.GetLabels()[clusterv1alpha1.MemberLabel] != ""
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isKubeconfig(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return isKubeconfig(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return isKubeconfig(e.Object) || isIdentity(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// deletions lets through delete events only.
// apiEnablementsChanged passes a MemberCluster whose reported API changed:
// a Pull-mode agent's namespaced role lists what its member serves.
func apiEnablementsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			after, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && after.Spec.SyncMode == clusterv1alpha1.Pull &&
				!equality.Semantic.DeepEqual(before.Status.APIEnablements, after.Status.APIEnablements)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// pullMemberWorkChanged passes a new or changed Work of a Pull-mode member:
// what it needs travels to the agent's rights (agentrights.go).
// agentGrantWindow is how long a Pull member's new or changed Work waits
// for others before the member is reconciled (its agent's grant): while a
// fleet of 10,000 bindings filled, reconciling each member again for each
// new Work kept three workers busy with 0.6 s reconciles, most of them
// reads from the hub's API server (BenchmarkManagerMemory).
const agentGrantWindow = time.Second

func (r *Reconciler) pullMemberWorkChanged() predicate.Funcs {
	ofPullMember := func(o client.Object) bool {
		member, ok := strings.CutPrefix(o.GetNamespace(), clusterv1alpha1.ExecutionNamespacePrefix)
		m := &clusterv1alpha1.MemberCluster{}
		return ok && r.Client.Get(context.Background(), client.ObjectKey{Name: member}, m) == nil && m.Spec.SyncMode == clusterv1alpha1.Pull
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return ofPullMember(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() && ofPullMember(e.ObjectNew)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func deletions() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func (r *Reconciler) namespaceToClusters(ctx context.Context, o client.Object) []reconcile.Request {
	clusters := &capiv1.ClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(o.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List Clusters of a relabelled namespace", "namespace", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(clusters.Items))
	for i := range clusters.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&clusters.Items[i])})
	}
	return out
}

func (r *Reconciler) secretToCluster(ctx context.Context, o client.Object) []reconcile.Request {
	if name := o.GetLabels()[capiv1.ClusterNameLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	}
	return r.memberNameToCluster(ctx, o.GetLabels()[clusterv1alpha1.MemberLabel])
}

func (r *Reconciler) workToCluster(ctx context.Context, o client.Object) []reconcile.Request {
	member, ok := strings.CutPrefix(o.GetNamespace(), clusterv1alpha1.ExecutionNamespacePrefix)
	if !ok {
		return nil
	}
	return r.memberNameToCluster(ctx, member)
}

// addonToClusters maps an add-on ClusterResourceSet to the Clusters it
// serves: the namespace's members for the estimator's, the owner for an agent's.
func (r *Reconciler) addonToClusters(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetName() == estimatorAddon {
		clusters := &capiv1.ClusterList{}
		if err := r.Client.List(ctx, clusters, client.InNamespace(o.GetNamespace()), client.HasLabels{clusterv1alpha1.MemberLabel}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(clusters.Items))
		for i := range clusters.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&clusters.Items[i])})
		}
		return out
	}
	var out []reconcile.Request
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Cluster" && ref.APIVersion == capiv1.GroupVersion.String() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}})
		}
	}
	return out
}

func (r *Reconciler) memberNameToCluster(ctx context.Context, member string) []reconcile.Request {
	if member == "" {
		return nil
	}
	m := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: member}, m); err != nil {
		return nil
	}
	return memberToCluster(ctx, m)
}

func memberToCluster(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1alpha1.MemberCluster)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Spec.ClusterRef.Namespace, Name: m.Spec.ClusterRef.Name}}}
}
