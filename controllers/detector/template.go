package detector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/federatednamespace"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/policymatch"
)

// Event reasons on templates.
const (
	// NamespaceNotFederatedReason: a policy selects the template but its
	// namespace is not federated.
	NamespaceNotFederatedReason = policyv1alpha1.NamespaceNotFederatedReason
	// BindingFailedReason: the template's binding could not be written.
	BindingFailedReason = "BindingFailed"
	// ReleasedReason: no policy selects the template any more; its binding
	// and its objects in members are kept.
	ReleasedReason = "Released"
)

// templateReconciler claims templates and keeps their bindings.
type templateReconciler struct {
	*Detector
	kinds *kindWatches
}

func (r *templateReconciler) setup(mgr ctrl.Manager, options controller.TypedOptions[TemplateKey]) error {
	options.Reconciler = r
	if options.LogConstructor == nil {
		log := mgr.GetLogger().WithValues("controller", "detector")
		options.LogConstructor = func(k *TemplateKey) logr.Logger {
			if k == nil {
				return log
			}
			return log.WithValues("template", k.String(), "apiVersion", k.GVK.GroupVersion().String())
		}
	}
	c, err := controller.NewTyped("detector", mgr, options)
	if err != nil {
		return fmt.Errorf("detector: %w", err)
	}
	// Policy and namespace events re-evaluate the templates they may concern.
	for _, src := range []source.TypedSource[TemplateKey]{
		source.TypedKind(r.Cache, client.Object(&policyv1alpha1.PropagationPolicy{}),
			handler.TypedEnqueueRequestsFromMapFunc(r.templatesOfPolicy), specChanged()),
		source.TypedKind(r.Cache, client.Object(&policyv1alpha1.ClusterPropagationPolicy{}),
			handler.TypedEnqueueRequestsFromMapFunc(r.templatesOfPolicy), specChanged()),
		source.TypedKind(r.Cache, client.Object(&corev1.Namespace{}),
			handler.TypedEnqueueRequestsFromMapFunc(r.templatesOfNamespace), federationChanged()),
	} {
		if err := c.Watch(src); err != nil {
			return fmt.Errorf("detector: %w", err)
		}
	}
	if r.KindChanged != nil {
		if err := c.Watch(source.TypedChannel(r.KindChanged, handler.TypedEnqueueRequestsFromMapFunc(r.templatesOfKind))); err != nil {
			return fmt.Errorf("detector: %w", err)
		}
	}
	r.kinds.addSink("detector", func(gvk schema.GroupVersionKind) error {
		return c.Watch(source.TypedKind(r.Cache, metadataOf(gvk),
			handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o *metav1.PartialObjectMetadata) []TemplateKey {
				return []TemplateKey{{GVK: gvk, Namespace: o.Namespace, Name: o.Name}}
			}),
			templateChanged()))
	})
	return nil
}

// Reconcile claims the template for the policy of highest precedence that
// selects it and writes its binding. When no policy selects it any more (its
// policy deleted or narrowed) it removes the claims and keeps the binding, so
// that what runs in members stays, as Karmada does; a policy that selects it
// later takes the same binding over. Only a template that is gone loses its
// binding, and with it its objects in members.
func (r *templateReconciler) Reconcile(ctx context.Context, key TemplateKey) (ctrl.Result, error) {
	tmpl := metadataOf(key.GVK)
	if err := r.Client.Get(ctx, key.ObjectKey(), tmpl); err != nil {
		if apierrors.IsNotFound(err) {
			r.Batching.Forget(key)
			return ctrl.Result{}, r.deleteBinding(ctx, key)
		}
		return ctrl.Result{}, fmt.Errorf("read %s: %w", key, err)
	}
	if !tmpl.DeletionTimestamp.IsZero() {
		r.Batching.Forget(key)
		return ctrl.Result{}, r.deleteBinding(ctx, key)
	}
	if neverTemplate(key.GVK, tmpl) {
		r.Batching.Forget(key)
		return ctrl.Result{}, nil
	}

	policies, err := listCandidates(ctx, r.Client, key.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	chosen := policymatch.Choose(templateOf(key.GVK, tmpl), claimOf(tmpl), policies)
	if chosen == nil {
		r.Batching.Forget(key)
		previous := claimOf(tmpl)
		if err := r.writeClaim(ctx, tmpl, nil); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.releaseBinding(ctx, key, tmpl, previous)
	}

	if key.Namespace != "" {
		federated, err := isFederated(ctx, r.Client, key.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !federated {
			r.Batching.Forget(key)
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, NamespaceNotFederatedReason, "Propagate",
				"%s selects this template but namespace %s is not federated, so it stays on the hub: %s",
				chosen.Ref, key.Namespace, labelStep(key.Namespace))
			return ctrl.Result{}, nil
		}
	}

	// A template claimed for the first time starts the pipeline's work on
	// the hub: while a burst of them arrives, the burst is served first.
	if claimOf(tmpl) == nil {
		if wait := r.Batching.Wait(key, time.Now()); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	if err := r.writeClaim(ctx, tmpl, &chosen.Ref); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeBinding(ctx, key, tmpl, chosen); err != nil {
		var script *interpreter.ScriptError
		if errors.As(err, &script) {
			// Not retried: the same script fails the same way until the
			// template or the customization changes, and both re-queue it.
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, workv1alpha1.BindingReasonInterpreterFailed, "Propagate", "%s", err.Error())
			return ctrl.Result{}, r.interpretationFailed(ctx, key, script)
		}
		r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, BindingFailedReason, "Propagate", "%s", err.Error())
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// labelStep is the one step that federates a namespace.
func labelStep(namespace string) string {
	return fmt.Sprintf("label it with `kubectl label namespace %s %s=true`", namespace, policyv1alpha1.FederatedLabel)
}

// neverTemplate tells the objects that are never propagated, whatever
// selects them: objects another object controls (the hub's controllers
// made them from a template), and per-namespace objects every member has
// of its own.
func neverTemplate(gvk schema.GroupVersionKind, obj metav1.Object) bool {
	if metav1.GetControllerOfNoCopy(obj) != nil {
		return true
	}
	if gvk.Group != "" {
		return false
	}
	switch {
	case gvk.Kind == "ResourceQuota" && obj.GetName() == federatednamespace.QuotaName,
		gvk.Kind == "ConfigMap" && obj.GetName() == "kube-root-ca.crt",
		gvk.Kind == "ServiceAccount" && obj.GetName() == "default":
		return true
	}
	return false
}

func templateOf(gvk schema.GroupVersionKind, obj metav1.Object) policymatch.Template {
	return policymatch.Template{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		Labels:     obj.GetLabels(),
	}
}

// listCandidates lists the policies that may claim a template of namespace:
// the PropagationPolicies of that namespace and every
// ClusterPropagationPolicy; policies being deleted claim nothing.
func listCandidates(ctx context.Context, c client.Reader, namespace string) ([]policymatch.Policy, error) {
	var out []policymatch.Policy
	if namespace != "" {
		pps := &policyv1alpha1.PropagationPolicyList{}
		if err := c.List(ctx, pps, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("list PropagationPolicies of %s: %w", namespace, err)
		}
		for i := range pps.Items {
			p := &pps.Items[i]
			if p.DeletionTimestamp.IsZero() {
				out = append(out, policymatch.Policy{Ref: policymatch.Ref{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, Spec: &p.Spec})
			}
		}
	}
	cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := c.List(ctx, cpps); err != nil {
		return nil, fmt.Errorf("list ClusterPropagationPolicies: %w", err)
	}
	for i := range cpps.Items {
		p := &cpps.Items[i]
		if p.DeletionTimestamp.IsZero() {
			out = append(out, policymatch.Policy{Ref: policymatch.Ref{Cluster: true, Name: p.Name, UID: p.UID}, Spec: &p.Spec})
		}
	}
	return out, nil
}

func isFederated(ctx context.Context, c client.Reader, namespace string) (bool, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read namespace %s: %w", namespace, err)
	}
	return federatednamespace.Federated(ns), nil
}

// writeClaim records (or, with nil, removes) the claim on the template.
func (r *templateReconciler) writeClaim(ctx context.Context, tmpl *metav1.PartialObjectMetadata, ref *policymatch.Ref) error {
	before := tmpl.DeepCopy()
	if !setClaim(tmpl, ref) {
		return nil
	}
	if err := r.Client.Patch(ctx, tmpl, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("record the claim on %s %s: %w", tmpl.Kind, client.ObjectKeyFromObject(tmpl), err)
	}
	return nil
}

// BindingName is the name of a template's binding: <name>-<kind, lowercase>.
func BindingName(templateName, kind string) string {
	return templateName + "-" + strings.ToLower(kind)
}

// newBinding is an empty binding of the template's scope.
func newBinding(key TemplateKey) workv1alpha1.Binding {
	name := BindingName(key.Name, key.GVK.Kind)
	if key.Namespace == "" {
		return &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name}}
}

// bindingOf reports whether a binding is the template's: two kinds of the
// same name in different groups share a binding name.
func bindingOf(b workv1alpha1.Binding, key TemplateKey) bool {
	r := b.BindingSpec().Resource
	return r.APIVersion == key.GVK.GroupVersion().String() && r.Kind == key.GVK.Kind && r.Name == key.Name
}

// deleteBinding removes the template's binding, if it has one. The
// binding's owner reference would let the garbage collector do it; doing it
// here is immediate and does not depend on one running.
func (r *templateReconciler) deleteBinding(ctx context.Context, key TemplateKey) error {
	r.Templates.Forget(key.GVK.GroupVersion().String(), key.GVK.Kind, key.Namespace, key.Name)
	b := newBinding(key)
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(b), b.(client.Object)); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !bindingOf(b, key) || !b.GetDeletionTimestamp().IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, b.(client.Object)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the binding of %s: %w", key, err)
	}
	return nil
}

// releaseBinding removes the policy's claim from the template's binding and
// keeps the binding, its placement and its Works: deleting or narrowing a
// policy never removes running workloads.
func (r *templateReconciler) releaseBinding(ctx context.Context, key TemplateKey, tmpl client.Object, previous *policymatch.Ref) error {
	b := newBinding(key)
	obj := b.(client.Object)
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !bindingOf(b, key) || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	if !setClaim(obj, nil) {
		return nil
	}
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("release the binding of %s: %w", key, err)
	}
	by := "its policy"
	if previous != nil {
		by = previous.String()
	}
	r.Recorder.Eventf(tmpl, obj, corev1.EventTypeNormal, ReleasedReason, "Release",
		"%s no longer selects this template: its binding %s and its objects in members are kept as they are; a policy that selects it takes them over, deleting the template removes them",
		by, obj.GetName())
	return nil
}

// writeBinding creates or updates the template's binding: the template's
// reference, replicas and requirements, and the policy's settings. Fields
// other controllers own (spec.clusters, gracefulEvictionTasks, requiredBy,
// rescheduleTriggeredAt) are left alone.
func (r *templateReconciler) writeBinding(ctx context.Context, key TemplateKey, meta *metav1.PartialObjectMetadata, policy *policymatch.Policy) error {
	full := &unstructured.Unstructured{}
	full.SetGroupVersionKind(key.GVK)
	if err := r.APIReader.Get(ctx, key.ObjectKey(), full); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	count, requirements, err := r.Interpreter.GetReplicas(ctx, full)
	if err != nil {
		return err
	}
	content, size, err := binding.Content(full)
	if err != nil {
		return err
	}
	r.Templates.Remember(full, content, size)
	b := newBinding(key)
	obj := b.(client.Object)
	_, err = controllerutil.CreateOrPatch(ctx, r.Client, obj, func() error {
		if obj.GetResourceVersion() != "" && !bindingOf(b, key) {
			return fmt.Errorf("binding %s belongs to %s %s, another kind of the same name", obj.GetName(),
				b.BindingSpec().Resource.APIVersion, b.BindingSpec().Resource.Kind)
		}
		if obj.GetResourceVersion() == "" {
			// Created holding the render phase's finalizer: added by the
			// render phase, it would be a write of its own racing the
			// place phase's first decision on every new binding.
			controllerutil.AddFinalizer(obj, workv1alpha1.BindingFinalizer)
		}
		setClaim(obj, &policy.Ref)
		if err := controllerutil.SetOwnerReference(meta, obj, r.Client.Scheme()); err != nil {
			return err
		}
		spec := b.BindingSpec()
		version := full.GetResourceVersion()
		if obj.GetAnnotations()[workv1alpha1.TemplateContentAnnotation] == content && spec.Resource.UID == full.GetUID() {
			// Only what members never receive changed (the template's
			// status, written by the hub's own controllers; server-set
			// metadata): the binding keeps the version it follows, and
			// no new generation sets every phase to work again.
			version = spec.Resource.ResourceVersion
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[workv1alpha1.TemplateContentAnnotation] = content
		obj.SetAnnotations(annotations)
		spec.Resource = workv1alpha1.ObjectReference{
			APIVersion:      key.GVK.GroupVersion().String(),
			Kind:            key.GVK.Kind,
			Namespace:       key.Namespace,
			Name:            key.Name,
			UID:             full.GetUID(),
			ResourceVersion: version,
		}
		spec.Replicas = count
		spec.ReplicaRequirements = requirements
		copyPolicy(spec, policy.Spec)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write the binding of %s: %w", key, err)
	}
	if apimeta.FindStatusCondition(b.BindingStatus().Conditions, workv1alpha1.ConditionInterpreted) != nil {
		before := obj.DeepCopyObject().(client.Object)
		apimeta.RemoveStatusCondition(&b.BindingStatus().Conditions, workv1alpha1.ConditionInterpreted)
		if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("clear the Interpreted condition of the binding of %s: %w", key, err)
		}
	}
	return nil
}

// interpretationFailed says on the template's binding, when it has one,
// that a customization's script could not read the template; its spec
// keeps what was last read.
func (r *templateReconciler) interpretationFailed(ctx context.Context, key TemplateKey, script *interpreter.ScriptError) error {
	b := newBinding(key)
	obj := b.(client.Object)
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !bindingOf(b, key) {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	changed := apimeta.SetStatusCondition(&b.BindingStatus().Conditions, metav1.Condition{
		Type: workv1alpha1.ConditionInterpreted, Status: metav1.ConditionFalse, ObservedGeneration: obj.GetGeneration(),
		Reason: workv1alpha1.BindingReasonInterpreterFailed, Message: script.Error(),
	})
	if !changed {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("say on the binding of %s that its template could not be read: %w", key, err)
	}
	return nil
}

// copyPolicy copies the policy's settings that the rest of the pipeline
// reads from the binding.
func copyPolicy(spec *workv1alpha1.ResourceBindingSpec, p *policyv1alpha1.PropagationSpec) {
	spec.PropagateDeps = p.PropagateDeps
	spec.Placement = p.Placement.DeepCopy()
	spec.SchedulerName = p.SchedulerName
	spec.Failover = p.Failover.DeepCopy()
	spec.ConflictResolution = p.ConflictResolution
	spec.PreserveResourcesOnDeletion = ptr.To(ptr.Deref(p.PreserveResourcesOnDeletion, false))
	spec.Suspension = nil
	if p.Suspension != nil {
		spec.Suspension = &workv1alpha1.Suspension{Suspension: *p.Suspension.DeepCopy()}
	}
}

// templatesOfPolicy lists the templates a policy event may concern: those
// it selects (by the kinds watched so far) and those it claims.
func (r *templateReconciler) templatesOfPolicy(ctx context.Context, obj client.Object) []TemplateKey {
	log := ctrl.LoggerFrom(ctx)
	var spec *policyv1alpha1.PropagationSpec
	var claimLabel string
	namespace := ""
	switch p := obj.(type) {
	case *policyv1alpha1.PropagationPolicy:
		spec, claimLabel, namespace = &p.Spec, policyv1alpha1.PropagationPolicyPermanentIDLabel, p.Namespace
	case *policyv1alpha1.ClusterPropagationPolicy:
		spec, claimLabel = &p.Spec, policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel
	default:
		return nil
	}
	selected := map[resourceKind]bool{}
	for _, s := range spec.ResourceSelectors {
		selected[resourceKind{s.APIVersion, s.Kind}] = true
	}
	var keys []TemplateKey
	for _, gvk := range r.kinds.Kinds() {
		opts := []client.ListOption{client.InNamespace(namespace)}
		if !selected[resourceKind{gvk.GroupVersion().String(), gvk.Kind}] {
			opts = append(opts, client.MatchingLabels{claimLabel: string(obj.GetUID())})
		}
		list := metadataListOf(gvk)
		if err := r.Client.List(ctx, list, opts...); err != nil {
			log.Error(err, "List templates for a policy event", "kind", gvk)
			continue
		}
		for _, t := range list.Items {
			keys = append(keys, TemplateKey{GVK: gvk, Namespace: t.Namespace, Name: t.Name})
		}
	}
	return keys
}

// templatesOfKind lists the templates of one kind, when the detector
// watches it.
func (r *templateReconciler) templatesOfKind(ctx context.Context, gvk schema.GroupVersionKind) []TemplateKey {
	if !slices.Contains(r.kinds.Kinds(), gvk) {
		return nil
	}
	list := metadataListOf(gvk)
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List templates of a kind whose customization changed", "kind", gvk)
		return nil
	}
	keys := make([]TemplateKey, 0, len(list.Items))
	for _, t := range list.Items {
		keys = append(keys, TemplateKey{GVK: gvk, Namespace: t.Namespace, Name: t.Name})
	}
	return keys
}

// templatesOfNamespace lists the templates of a namespace whose federation changed.
func (r *templateReconciler) templatesOfNamespace(ctx context.Context, ns client.Object) []TemplateKey {
	var keys []TemplateKey
	for _, gvk := range r.kinds.Kinds() {
		list := metadataListOf(gvk)
		if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List templates of a namespace", "kind", gvk, "namespace", ns.GetName())
			continue
		}
		for _, t := range list.Items {
			keys = append(keys, TemplateKey{GVK: gvk, Namespace: t.Namespace, Name: t.Name})
		}
	}
	return keys
}

type resourceKind struct{ apiVersion, kind string }

// specChanged passes creations, deletions and spec changes of policies, not
// the policy controllers' status writes.
func specChanged() predicate.TypedPredicate[client.Object] {
	return predicate.TypedGenerationChangedPredicate[client.Object]{}
}

// federationChanged passes namespace events that change whether it is federated.
func federationChanged() predicate.TypedPredicate[client.Object] {
	return predicate.TypedFuncs[client.Object]{
		CreateFunc: func(e event.TypedCreateEvent[client.Object]) bool { return federatednamespace.Federated(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
			return federatednamespace.Federated(e.ObjectOld) != federatednamespace.Federated(e.ObjectNew)
		},
		DeleteFunc:  func(event.TypedDeleteEvent[client.Object]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[client.Object]) bool { return false },
	}
}

var _ reconcile.TypedReconciler[TemplateKey] = &templateReconciler{}
