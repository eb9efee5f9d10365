package detector

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/membernames"
	"github.com/flotilla-io/flotilla/internal/policymatch"
)

// unknownKindRetry is how soon a policy naming a kind the hub does not
// serve is looked at again: installing a CRD sends no event to the policy.
const unknownKindRetry = 30 * time.Second

// policyReconciler writes the Propagating condition of one policy kind.
// templateCountWindow is how long template events wait for more before a
// policy is evaluated again: a policy's condition follows its templates at
// most this late, in one write per window however many are applied.
const templateCountWindow = time.Second

type policyReconciler struct {
	*Detector
	kinds   *kindWatches
	cluster bool
}

// policyObject is a PropagationPolicy or ClusterPropagationPolicy.
type policyObject interface {
	client.Object
	conditions.Setter
}

func (r *policyReconciler) name() string {
	if r.cluster {
		return "clusterpropagationpolicy"
	}
	return "propagationpolicy"
}

func (r *policyReconciler) newPolicy() policyObject {
	if r.cluster {
		return &policyv1alpha1.ClusterPropagationPolicy{}
	}
	return &policyv1alpha1.PropagationPolicy{}
}

func (r *policyReconciler) setup(mgr ctrl.Manager) error {
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(r.name()).
		For(r.newPolicy(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfNamespace),
			builder.WithPredicates(federationChanged())).
		Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.policiesNamingClusters),
			builder.WithPredicates(memberJoinedOrLeft())).
		Build(r)
	if err != nil {
		return fmt.Errorf("%s controller: %w", r.name(), err)
	}
	r.kinds.addSink(r.name(), func(gvk schema.GroupVersionKind) error {
		// Coalesced: each template a policy gains or loses changes the
		// count its condition gives, and a burst of templates applied
		// one after another was a status write of the policy per
		// template (77 of them on the hub within one benchmark's
		// apply); the count now settles at most templateCountWindow late.
		return c.Watch(source.TypedKind(r.Cache, metadataOf(gvk),
			pacing.EnqueueCoalesced(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
				return r.policiesSelectingKind(ctx, gvk, o.Namespace)
			}, templateCountWindow),
			templateChanged()))
	})
	return nil
}

// Reconcile evaluates what the policy selects and writes its Propagating
// condition, in one patch.
func (r *policyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	policy := r.newPolicy()
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		// A deleted policy's templates are re-evaluated by the template controller.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !policy.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(policy, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := helper.Patch(ctx, policy, patch.WithOwnedConditions{Conditions: []string{policyv1alpha1.ConditionPropagating}}); err != nil {
			// A policy deleted meanwhile has no status left to write.
			if gone := r.Client.Get(ctx, req.NamespacedName, r.newPolicy()); apierrors.IsNotFound(gone) {
				return
			}
			reterr = kerrors.NewAggregate([]error{reterr, fmt.Errorf("patch %s %s: %w", r.name(), req.NamespacedName, err)})
		}
	}()

	self := r.policyOf(policy)
	e, err := r.evaluate(ctx, self)
	if err != nil {
		return ctrl.Result{}, err
	}
	cond := e.condition(self)
	cond.ObservedGeneration = policy.GetGeneration()
	conditions.Set(policy, cond)
	if len(e.unknownKinds) > 0 {
		return ctrl.Result{RequeueAfter: unknownKindRetry}, nil
	}
	return ctrl.Result{}, nil
}

func (r *policyReconciler) policyOf(obj policyObject) policymatch.Policy {
	switch p := obj.(type) {
	case *policyv1alpha1.PropagationPolicy:
		return policymatch.Policy{Ref: policymatch.Ref{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, Spec: &p.Spec}
	case *policyv1alpha1.ClusterPropagationPolicy:
		return policymatch.Policy{Ref: policymatch.Ref{Cluster: true, Name: p.Name, UID: p.UID}, Spec: &p.Spec}
	}
	panic(fmt.Sprintf("not a propagation policy: %T", obj))
}

// evaluation is what a policy's selection amounts to.
type evaluation struct {
	invalid      []string       // selectors that cannot be evaluated
	unknownKinds []string       // "apiVersion Kind" the hub does not serve
	clusterKinds []string       // cluster-scoped kinds a PropagationPolicy names
	selected     int            // templates the policy selects
	claimed      int            // of which it claims (or will claim)
	others       map[string]int // of which other policies claim, by policy
	// notFederated counts selected templates by namespace not federated.
	notFederated map[string]int
	// policyNamespaceFederated is false for a PropagationPolicy of a
	// namespace that is not federated.
	policyNamespaceFederated bool
	// unknownMembers says which clusterNames of the placement name no
	// member (package membernames), or is "".
	unknownMembers string
}

func (r *policyReconciler) evaluate(ctx context.Context, self policymatch.Policy) (*evaluation, error) {
	e := &evaluation{others: map[string]int{}, notFederated: map[string]int{}, policyNamespaceFederated: true}
	unknown, err := r.unknownMembers(ctx, &self.Spec.Placement)
	if err != nil {
		return nil, err
	}
	e.unknownMembers = unknown
	if !self.Cluster {
		federated, err := isFederated(ctx, r.Client, self.Namespace)
		if err != nil {
			return nil, err
		}
		e.policyNamespaceFederated = federated
	}

	var kinds []schema.GroupVersionKind
	for i, s := range self.Spec.ResourceSelectors {
		gv, err := schema.ParseGroupVersion(s.APIVersion)
		if err != nil {
			e.invalid = append(e.invalid, fmt.Sprintf("resourceSelectors[%d].apiVersion: %v", i, err))
			continue
		}
		if s.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
				e.invalid = append(e.invalid, fmt.Sprintf("resourceSelectors[%d].labelSelector: %v", i, err))
			}
		}
		gvk := gv.WithKind(s.Kind)
		mapping, err := r.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			e.unknownKinds = appendOnce(e.unknownKinds, s.APIVersion+" "+s.Kind)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("find the resource of %s: %w", gvk, err)
		}
		if !self.Cluster && mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			e.clusterKinds = appendOnce(e.clusterKinds, s.Kind)
			continue
		}
		if !slices.Contains(kinds, gvk) {
			kinds = append(kinds, gvk)
		}
	}

	federated := map[string]bool{}
	candidates := map[string][]policymatch.Policy{}
	for _, gvk := range kinds {
		if err := r.kinds.Ensure(gvk); err != nil {
			return nil, err
		}
		list := metadataListOf(gvk)
		if err := r.Client.List(ctx, list, client.InNamespace(self.Namespace)); err != nil {
			return nil, fmt.Errorf("list %s templates: %w", gvk, err)
		}
		for i := range list.Items {
			tmpl := &list.Items[i]
			if !tmpl.DeletionTimestamp.IsZero() || neverTemplate(gvk, tmpl) {
				continue
			}
			t := templateOf(gvk, tmpl)
			if s, _ := policymatch.Selects(&self, t); s == policymatch.NotSelected {
				continue
			}
			e.selected++
			if ns := t.Namespace; ns != "" {
				if _, ok := federated[ns]; !ok {
					f, err := isFederated(ctx, r.Client, ns)
					if err != nil {
						return nil, err
					}
					federated[ns] = f
				}
				if !federated[ns] {
					e.notFederated[ns]++
					continue
				}
			}
			if _, ok := candidates[t.Namespace]; !ok {
				c, err := listCandidates(ctx, r.Client, t.Namespace)
				if err != nil {
					return nil, err
				}
				candidates[t.Namespace] = c
			}
			winner := policymatch.Choose(t, claimOf(tmpl), candidates[t.Namespace])
			switch {
			case winner == nil:
				// Not among the candidates listed (e.g. created a moment ago): counted on the next event.
			case winner.Ref == self.Ref:
				e.claimed++
			default:
				e.others[winner.Ref.String()]++
			}
		}
	}
	return e, nil
}

// keptNote says what becomes of templates propagated before their namespace
// lost its label.
const keptNote = "what was propagated before is kept as it is in members (neither updated nor removed) until the label is back"

// unknownMembers says which clusterNames of placement name no member.
func (r *policyReconciler) unknownMembers(ctx context.Context, placement *policyv1alpha1.Placement) (string, error) {
	if len(membernames.InPlacement(placement, func(string) bool { return false })) == 0 {
		return "", nil // names no cluster at all
	}
	members := &clusterv1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, members); err != nil {
		return "", fmt.Errorf("list MemberClusters: %w", err)
	}
	names := make([]string, len(members.Items))
	for i := range members.Items {
		names[i] = members.Items[i].Name
	}
	return membernames.Message(membernames.InPlacement(placement, membernames.Set(names))), nil
}

// condition is the Propagating condition an evaluation makes: the first
// reason that stops templates from propagating, else what propagates; a
// clusterNames naming no member is added to its message either way.
func (e *evaluation) condition(self policymatch.Policy) metav1.Condition {
	c := e.propagating(self)
	if e.unknownMembers != "" {
		c.Message += "; " + e.unknownMembers
	}
	return c
}

func (e *evaluation) propagating(self policymatch.Policy) metav1.Condition {
	falseBecause := func(reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: policyv1alpha1.ConditionPropagating, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(e.invalid) > 0:
		return falseBecause(policyv1alpha1.InvalidResourceSelectorReason, "%s", strings.Join(e.invalid, "; "))
	case !e.policyNamespaceFederated:
		return falseBecause(policyv1alpha1.NamespaceNotFederatedReason,
			"namespace %s is not federated, so the templates this policy selects (%d now) stay on the hub: %s; %s",
			self.Namespace, e.selected, labelStep(self.Namespace), keptNote)
	case len(e.notFederated) > 0:
		namespaces := slices.Sorted(maps.Keys(e.notFederated))
		blocked := 0
		for _, n := range e.notFederated {
			blocked += n
		}
		which, step := "namespace "+namespaces[0]+" is", labelStep(namespaces[0])
		if len(namespaces) > 1 {
			which = "namespaces " + strings.Join(namespaces, ", ") + " are"
			step = fmt.Sprintf("label each with `kubectl label namespace <name> %s=true`", policyv1alpha1.FederatedLabel)
		}
		return falseBecause(policyv1alpha1.NamespaceNotFederatedReason,
			"%d of the %d templates this policy selects stay on the hub because %s not federated: %s; %s",
			blocked, e.selected, which, step, keptNote)
	case len(e.unknownKinds) > 0:
		return falseBecause(policyv1alpha1.UnknownResourceKindReason,
			"the hub serves no %s: install the CRD on the hub, or correct the resourceSelectors", strings.Join(e.unknownKinds, ", "))
	case e.selected == 0:
		return falseBecause(policyv1alpha1.NoMatchingTemplatesReason, "%s", "no template matches the resourceSelectors"+e.clusterKindsNote())
	case e.claimed == 0:
		return falseBecause(policyv1alpha1.ClaimedByOtherPoliciesReason,
			"every template this policy selects (%d) is claimed by another policy: %s", e.selected, e.othersList())
	}
	msg := "propagates " + templates(e.claimed)
	if len(e.others) > 0 {
		msg += "; other selected templates are claimed by " + e.othersList()
	}
	msg += e.clusterKindsNote()
	return metav1.Condition{Type: policyv1alpha1.ConditionPropagating, Status: metav1.ConditionTrue, Reason: policyv1alpha1.PropagatingReason, Message: msg}
}

// clusterKindsNote tells a PropagationPolicy that the cluster-scoped kinds
// it names (a ClusterResourceEnvelope, a ClusterRole…) are never selected,
// whatever else it propagates.
func (e *evaluation) clusterKindsNote() string {
	if len(e.clusterKinds) == 0 {
		return ""
	}
	verb := "is"
	if len(e.clusterKinds) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("; %s %s cluster-scoped, which only a ClusterPropagationPolicy selects", strings.Join(e.clusterKinds, ", "), verb)
}

func (e *evaluation) othersList() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(e.others)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", name, e.others[name]))
	}
	return strings.Join(parts, ", ")
}

// templates is "1 template" or "n templates".
func templates(n int) string {
	if n == 1 {
		return "1 template"
	}
	return fmt.Sprintf("%d templates", n)
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// policiesOfNamespace: a namespace's federation changed; PropagationPolicies
// of it, or every ClusterPropagationPolicy, re-evaluate.
func (r *policyReconciler) policiesOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	if r.cluster {
		return r.clusterPolicies(ctx, func(*policyv1alpha1.PropagationSpec) bool { return true })
	}
	return r.namespacedPolicies(ctx, ns.GetName(), func(*policyv1alpha1.PropagationSpec) bool { return true })
}

// policiesNamingClusters: a member joined or left; the policies whose
// placement names clusters re-evaluate, as a name may now be known or unknown.
func (r *policyReconciler) policiesNamingClusters(ctx context.Context, _ client.Object) []reconcile.Request {
	names := func(spec *policyv1alpha1.PropagationSpec) bool {
		return len(membernames.InPlacement(&spec.Placement, func(string) bool { return false })) > 0
	}
	if r.cluster {
		return r.clusterPolicies(ctx, names)
	}
	return r.namespacedPolicies(ctx, "", names)
}

// memberJoinedOrLeft passes a MemberCluster's creation and deletion only.
func memberJoinedOrLeft() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// policiesSelectingKind: a template of gvk changed; the policies with a
// selector of that kind re-evaluate.
func (r *policyReconciler) policiesSelectingKind(ctx context.Context, gvk schema.GroupVersionKind, namespace string) []reconcile.Request {
	apiVersion := gvk.GroupVersion().String()
	names := func(spec *policyv1alpha1.PropagationSpec) bool {
		return slices.ContainsFunc(spec.ResourceSelectors, func(s policyv1alpha1.ResourceSelector) bool {
			return s.APIVersion == apiVersion && s.Kind == gvk.Kind
		})
	}
	if r.cluster {
		return r.clusterPolicies(ctx, names)
	}
	if namespace == "" {
		return nil
	}
	return r.namespacedPolicies(ctx, namespace, names)
}

func (r *policyReconciler) clusterPolicies(ctx context.Context, keep func(*policyv1alpha1.PropagationSpec) bool) []reconcile.Request {
	list := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List ClusterPropagationPolicies")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i].Spec) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

func (r *policyReconciler) namespacedPolicies(ctx context.Context, namespace string, keep func(*policyv1alpha1.PropagationSpec) bool) []reconcile.Request {
	list := &policyv1alpha1.PropagationPolicyList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "List PropagationPolicies", "namespace", namespace)
		}
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i].Spec) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
