package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/resourcehealth"
)

// ConflictMessage is the message of a manifest not applied because the
// object exists in the member and is not Flotilla's.
const ConflictMessage = "exists in the member and is not managed by Flotilla; set conflictResolution: Overwrite to take it over"

// result is one manifest's outcome: its status and, when not applied, the
// Work condition reason that says why.
type result struct {
	status workv1alpha1.ManifestStatus
	reason string
}

// applyManifests applies each manifest in order; a failure of one does not
// stop the others.
func (r *Reconciler) applyManifests(ctx context.Context, s *scope) []result {
	results := make([]result, 0, len(s.work.Spec.Workload.Manifests))
	namespaces := map[string]bool{}
	for i, m := range s.work.Spec.Workload.Manifests {
		results = append(results, r.applyManifest(ctx, s, i, m.Raw, namespaces))
	}
	// An event per new failure, not per retry of the same one.
	for _, res := range results {
		if !res.status.Applied && !failedBefore(s.work.Status.ManifestStatuses, res.status) {
			r.Recorder.Eventf(s.work, nil, corev1.EventTypeWarning, ApplyFailedReason, "Apply", "%s: %s", describe(res.status.Identifier), res.status.Message)
		}
	}
	return results
}

func (r *Reconciler) applyManifest(ctx context.Context, s *scope, ordinal int, raw []byte, namespaces map[string]bool) result {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return result{
			status: workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: ordinal},
				Health: workv1alpha1.ResourceUnknown, Message: fmt.Sprintf("cannot decode manifest %d: %v", ordinal, err)},
			reason: workv1alpha1.WorkReasonInvalidManifest,
		}
	}
	gvk := obj.GroupVersionKind()
	id := workv1alpha1.ResourceIdentifier{Ordinal: ordinal, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName()}
	failed := func(reason, format string, args ...any) result {
		return result{
			status: workv1alpha1.ManifestStatus{Identifier: id, Health: workv1alpha1.ResourceUnknown, Message: fmt.Sprintf(format, args...)},
			reason: reason,
		}
	}

	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return failed(workv1alpha1.WorkReasonAPINotEnabled, "the member does not serve %s", gvk)
	}
	if err != nil {
		return failed(workv1alpha1.WorkReasonApplyFailed, "find the resource of %s in the member: %v", gvk, err)
	}
	id.Resource = mapping.Resource.Resource
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			return failed(workv1alpha1.WorkReasonApplyFailed, "%s is namespaced but the manifest names no namespace", gvk.Kind)
		}
		if err := r.ensureNamespace(ctx, s, obj.GetNamespace(), namespaces); err != nil {
			return failed(workv1alpha1.WorkReasonApplyFailed, "%v", err)
		}
	} else {
		obj.SetNamespace("")
		id.Namespace = ""
	}

	overwrite := s.work.Spec.ConflictResolution == policyv1alpha1.ConflictOverwrite
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(gvk)
	err = s.client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case err == nil && !managedByFlotilla(existing) && !overwrite:
		return failed(workv1alpha1.WorkReasonConflict, ConflictMessage)
	case err != nil && !apierrors.IsNotFound(err):
		return failed(workv1alpha1.WorkReasonApplyFailed, "read the object in the member: %v", err)
	}

	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[workv1alpha1.ManagedByLabel] = workv1alpha1.ManagedByValue
	obj.SetLabels(labels)
	opts := []client.ApplyOption{client.FieldOwner(workv1alpha1.FieldManager)}
	if overwrite {
		opts = append(opts, client.ForceOwnership)
	}
	if err := s.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...); err != nil {
		return failed(workv1alpha1.WorkReasonApplyFailed, "%v", err)
	}

	// obj now holds the object as the member returned it.
	health, message := resourcehealth.Of(obj)
	st := workv1alpha1.ManifestStatus{Identifier: id, Applied: true, Health: health, Message: message}
	if status, found := obj.Object["status"]; found {
		if raw, err := json.Marshal(status); err == nil {
			st.Status = &runtime.RawExtension{Raw: raw}
		}
	}
	return result{status: st}
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
func (r *Reconciler) ensureNamespace(ctx context.Context, s *scope, name string, seen map[string]bool) error {
	if seen[name] {
		return nil
	}
	ns := &corev1.Namespace{}
	err := s.client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{workv1alpha1.ManagedByLabel: workv1alpha1.ManagedByValue}}}
		err = s.client.Create(ctx, ns)
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

// objectID names an object in a member.
type objectID struct {
	Group, Version, Kind, Namespace, Name string
}

func idOf(i workv1alpha1.ResourceIdentifier) objectID {
	return objectID{Group: i.Group, Version: i.Version, Kind: i.Kind, Namespace: i.Namespace, Name: i.Name}
}

// same is identity across versions: group, kind, namespace and name.
func (a objectID) same(b objectID) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

func appliedIdentifiers(statuses []workv1alpha1.ManifestStatus) []objectID {
	var out []objectID
	for _, st := range statuses {
		if st.Applied {
			out = append(out, idOf(st.Identifier))
		}
	}
	return out
}

// manifestIdentifiers names the objects of a Work's manifests, decoding
// only their type and name.
func manifestIdentifiers(w *workv1alpha1.Work) []objectID {
	var out []objectID
	for _, m := range w.Spec.Workload.Manifests {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(m.Raw, &head); err != nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			continue
		}
		out = append(out, objectID{Group: gv.Group, Version: gv.Version, Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name})
	}
	return out
}

func dedupe(ids []objectID) []objectID {
	var out []objectID
	for _, id := range ids {
		if !slices.ContainsFunc(out, id.same) {
			out = append(out, id)
		}
	}
	return out
}

// removeDropped deletes from the member the objects the Work applied
// before and no longer carries.
func (r *Reconciler) removeDropped(ctx context.Context, s *scope, results []result) error {
	var current []objectID
	for _, res := range results {
		current = append(current, idOf(res.status.Identifier))
	}
	current = append(current, manifestIdentifiers(s.work)...) // also those that failed to decode a mapping
	var dropped []objectID
	for _, id := range appliedIdentifiers(s.work.Status.ManifestStatuses) {
		if !slices.ContainsFunc(current, id.same) {
			dropped = append(dropped, id)
		}
	}
	return r.remove(ctx, s, dropped)
}

// remove deletes objects from the member, skipping those Flotilla does not
// manage and those another Work of the member still carries.
func (r *Reconciler) remove(ctx context.Context, s *scope, ids []objectID) error {
	if len(ids) == 0 {
		return nil
	}
	others, err := r.carriedByOtherWorks(ctx, s.work)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if slices.ContainsFunc(others, id.same) {
			continue
		}
		if err := r.removeOne(ctx, s, id); err != nil {
			r.Recorder.Eventf(s.work, nil, corev1.EventTypeWarning, RemoveFailedReason, "Remove", "%v", err)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove objects of Work %s/%s from member %s: %v", s.work.Namespace, s.work.Name, s.member, errs)
	}
	return nil
}

func (r *Reconciler) removeOne(ctx context.Context, s *scope, id objectID) error {
	gvk := schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := s.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("read %s %s/%s: %w", gvk, id.Namespace, id.Name, err)
	}
	if !managedByFlotilla(obj) || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	if err := s.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", gvk, id.Namespace, id.Name, err)
	}
	return nil
}

// carriedByOtherWorks lists the objects the member's other live Works carry.
func (r *Reconciler) carriedByOtherWorks(ctx context.Context, w *workv1alpha1.Work) ([]objectID, error) {
	list := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, list, client.InNamespace(w.Namespace)); err != nil {
		return nil, fmt.Errorf("list the Works of %s: %w", w.Namespace, err)
	}
	var out []objectID
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == w.Name || !other.DeletionTimestamp.IsZero() {
			continue
		}
		out = append(out, manifestIdentifiers(other)...)
	}
	return out, nil
}
