package applier

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// result is one manifest's outcome: its status and, when not applied, the
// Work condition reason that says why.
type result struct {
	status workv1alpha1.ManifestStatus
	reason string
}

// applyManifests applies each manifest in order; a failure of one does not
// stop the others.
func (a *Applier) applyManifests(ctx context.Context, t target, w *workv1alpha1.Work) []result {
	results := make([]result, 0, len(w.Spec.Workload.Manifests))
	namespaces := map[string]bool{}
	for i, m := range w.Spec.Workload.Manifests {
		results = append(results, a.applyManifest(ctx, t, w, i, m.Raw, namespaces))
	}
	// An event per new failure, not per retry of the same one.
	for _, res := range results {
		if !res.status.Applied && !failedBefore(w.Status.ManifestStatuses, res.status) {
			a.Recorder.Eventf(w, nil, corev1.EventTypeWarning, ApplyFailedReason, "Apply", "%s: %s", describe(res.status.Identifier), res.status.Message)
		}
	}
	return results
}

// manifest is a decoded manifest, located in the member.
type manifest struct {
	obj     *unstructured.Unstructured
	id      workv1alpha1.ResourceIdentifier
	mapping *meta.RESTMapping
}

// locate decodes a manifest and finds its resource in the member; a
// manifest that cannot be applied there comes back as a failed result.
func locate(t target, ordinal int, raw []byte) (*manifest, *result) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, &result{
			status: workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: ordinal},
				Health: workv1alpha1.ResourceUnknown, Message: fmt.Sprintf("cannot decode manifest %d: %v", ordinal, err)},
			reason: workv1alpha1.WorkReasonInvalidManifest,
		}
	}
	gvk := obj.GroupVersionKind()
	m := &manifest{obj: obj, id: workv1alpha1.ResourceIdentifier{Ordinal: ordinal, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	mapping, err := t.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, m.failed(workv1alpha1.WorkReasonAPINotEnabled, "the member does not serve %s", gvk)
	}
	if err != nil {
		return nil, m.failed(workv1alpha1.WorkReasonApplyFailed, "find the resource of %s in the member: %v", gvk, err)
	}
	m.mapping = mapping
	m.id.Resource = mapping.Resource.Resource
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			return nil, m.failed(workv1alpha1.WorkReasonApplyFailed, "%s is namespaced but the manifest names no namespace", gvk.Kind)
		}
	} else {
		obj.SetNamespace("")
		m.id.Namespace = ""
	}
	return m, nil
}

func (m *manifest) failed(reason, format string, args ...any) *result {
	return &result{
		status: workv1alpha1.ManifestStatus{Identifier: m.id, Health: workv1alpha1.ResourceUnknown, Message: fmt.Sprintf(format, args...)},
		reason: reason,
	}
}

// applied is the result of an object the member holds as Flotilla's: its
// health and the status the interpreter reflects of it.
func (a *Applier) applied(ctx context.Context, m *manifest, obj *unstructured.Unstructured) result {
	health, message := a.Interpreter.InterpretHealth(ctx, obj)
	if owners := interpreter.KeptBy(obj, workv1alpha1.FieldManager); len(owners) > 0 {
		// Said on every report, applied or only observed.
		message = strings.TrimSuffix(interpreter.RetainedMessage(obj, owners)+"; "+message, "; ")
	}
	st := workv1alpha1.ManifestStatus{Identifier: m.id, Applied: true, Health: health, Message: message}
	status, err := a.Interpreter.ReflectStatus(ctx, obj)
	if err != nil {
		st.Health = workv1alpha1.ResourceUnknown
		st.Message = strings.TrimSuffix(err.Error()+"; "+message, "; ")
	}
	st.Status = status
	return result{status: st}
}

func (a *Applier) applyManifest(ctx context.Context, t target, w *workv1alpha1.Work, ordinal int, raw []byte, namespaces map[string]bool) result {
	m, failed := locate(t, ordinal, raw)
	if failed != nil {
		return *failed
	}
	if m.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if err := ensureNamespace(ctx, t, m.obj.GetNamespace(), namespaces); err != nil {
			return *m.failed(workv1alpha1.WorkReasonApplyFailed, "%v", err)
		}
	}

	overwrite := w.Spec.ConflictResolution == policyv1alpha1.ConflictOverwrite
	desired, failed := a.desired(ctx, t, w, m, overwrite)
	if failed != nil {
		return *failed
	}
	err := apply(ctx, t, desired, overwrite)
	if apierrors.IsConflict(err) {
		// The member's object may have changed between the read and the
		// apply: an autoscaler scaling it at that moment owns a replica
		// count the read did not show as its. Read once more; when the
		// retain step now leaves out more, apply that.
		again, failed := a.desired(ctx, t, w, m, overwrite)
		if failed != nil {
			return *failed
		}
		if !equality.Semantic.DeepEqual(again.Object, desired.Object) {
			desired, err = again, apply(ctx, t, again, overwrite)
		}
	}
	if err != nil {
		return *m.failed(workv1alpha1.WorkReasonApplyFailed, "%v", err)
	}
	// desired now holds the object as the member returned it.
	return a.applied(ctx, m, desired)
}

// desired is the object to apply for m: the manifest, labelled Flotilla's,
// without what the member's copy keeps (Retain). A copy that is not
// Flotilla's is a conflict unless the Work overwrites.
func (a *Applier) desired(ctx context.Context, t target, w *workv1alpha1.Work, m *manifest, overwrite bool) (*unstructured.Unstructured, *result) {
	obj := m.obj.DeepCopy()
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	err := t.client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case err == nil && !managedByFlotilla(existing) && !overwrite:
		return nil, m.failed(workv1alpha1.WorkReasonConflict, "%s", conflictMessage(w))
	case err != nil && !apierrors.IsNotFound(err):
		return nil, m.failed(workv1alpha1.WorkReasonApplyFailed, "read the object in the member: %v", err)
	}

	// Retain: what the member owns stays the member's — a replica count
	// another manager owns there (an autoscaler), and what a customization's
	// retention script keeps (internal/interpreter.Retain).
	if err == nil {
		if _, err := a.Interpreter.Retain(ctx, obj, existing, workv1alpha1.FieldManager); err != nil {
			return nil, m.failed(workv1alpha1.WorkReasonApplyFailed, "%v", err)
		}
	}

	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[workv1alpha1.ManagedByLabel] = workv1alpha1.ManagedByValue
	obj.SetLabels(labels)
	return obj, nil
}

// apply applies obj to the member as Flotilla, forcing ownership when the
// Work overwrites; obj then holds the object as the member returned it.
func apply(ctx context.Context, t target, obj *unstructured.Unstructured, overwrite bool) error {
	opts := []client.ApplyOption{client.FieldOwner(workv1alpha1.FieldManager)}
	if overwrite {
		opts = append(opts, client.ForceOwnership)
	}
	return t.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...)
}

// observeManifest reads a manifest's object from the member without
// writing: missing, or not Flotilla's, it is reported not applied.
func (a *Applier) observeManifest(ctx context.Context, t target, w *workv1alpha1.Work, ordinal int, raw []byte) result {
	m, failed := locate(t, ordinal, raw)
	if failed != nil {
		return *failed
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(m.obj.GroupVersionKind())
	err := t.client.Get(ctx, client.ObjectKeyFromObject(m.obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return *m.failed(workv1alpha1.WorkReasonApplyFailed, "not found in the member")
	case err != nil:
		return *m.failed(workv1alpha1.WorkReasonApplyFailed, "read the object in the member: %v", err)
	case !managedByFlotilla(obj):
		return *m.failed(workv1alpha1.WorkReasonConflict, "%s", conflictMessage(w))
	}
	return a.applied(ctx, m, obj)
}

func failedBefore(previous []workv1alpha1.ManifestStatus, st workv1alpha1.ManifestStatus) bool {
	return slices.ContainsFunc(previous, func(p workv1alpha1.ManifestStatus) bool {
		return !p.Applied && p.Identifier == st.Identifier && p.Message == st.Message
	})
}

// managedByFlotilla reports whether an object in a member is Flotilla's:
// labelled so, or with fields owned by Flotilla's field manager.
func managedByFlotilla(obj metav1.Object) bool {
	if obj.GetLabels()[workv1alpha1.ManagedByLabel] == workv1alpha1.ManagedByValue {
		return true
	}
	return slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == workv1alpha1.FieldManager
	})
}

// ensureNamespace creates a namespace in the member when missing.
func ensureNamespace(ctx context.Context, t target, name string, seen map[string]bool) error {
	if seen[name] {
		return nil
	}
	ns := &corev1.Namespace{}
	err := t.client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{workv1alpha1.ManagedByLabel: workv1alpha1.ManagedByValue}}}
		err = t.client.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensure namespace %s in the member: %w", name, err)
	}
	seen[name] = true
	return nil
}
