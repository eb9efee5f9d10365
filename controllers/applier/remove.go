package applier

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

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
func (a *Applier) removeDropped(ctx context.Context, t target, w *workv1alpha1.Work, results []result) error {
	var current []objectID
	for _, res := range results {
		current = append(current, idOf(res.status.Identifier))
	}
	current = append(current, manifestIdentifiers(w)...) // also those that failed to decode a mapping
	var dropped []objectID
	for _, id := range appliedIdentifiers(w.Status.ManifestStatuses) {
		if !slices.ContainsFunc(current, id.same) {
			dropped = append(dropped, id)
		}
	}
	return a.remove(ctx, t, w, dropped)
}

// remove deletes objects from the member, skipping those Flotilla does not
// manage and those another Work of the member still carries.
func (a *Applier) remove(ctx context.Context, t target, w *workv1alpha1.Work, ids []objectID) error {
	if len(ids) == 0 {
		return nil
	}
	kept, err := a.stillCarried(ctx, w, ids)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if slices.ContainsFunc(kept, id.same) {
			continue
		}
		if err := removeOne(ctx, t, id); err != nil {
			a.Recorder.Eventf(w, nil, corev1.EventTypeWarning, RemoveFailedReason, "Remove", "%v", err)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove objects of Work %s/%s from member %s: %v", w.Namespace, w.Name, t.name, errs)
	}
	return nil
}

func removeOne(ctx context.Context, t target, id objectID) error {
	gvk := schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := t.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("read %s %s/%s: %w", gvk, id.Namespace, id.Name, err)
	}
	if !managedByFlotilla(obj) || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	if err := t.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", gvk, id.Namespace, id.Name, err)
	}
	return nil
}

// stillCarried returns those of ids that another live Work of w's member
// carries. Each Work's identifiers are remembered (Applier.carried): a
// removal from a member of 10,000 Works copied and decoded all of them,
// 108 ms and 22 MB each (BenchmarkWhatOtherWorksCarry).
func (a *Applier) stillCarried(ctx context.Context, w *workv1alpha1.Work, ids []objectID) ([]objectID, error) {
	list := &workv1alpha1.WorkList{}
	// Only read: the cache's objects are not copied.
	if err := a.Works.List(ctx, list, client.InNamespace(w.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list the Works of %s: %w", w.Namespace, err)
	}
	var kept []objectID
	a.carried.Each(w.Namespace, list.Items, func(other *workv1alpha1.Work) ([]objectID, bool) {
		return manifestIdentifiers(other), true
	}, func(other *workv1alpha1.Work, carries []objectID) {
		if other.Name == w.Name || !other.DeletionTimestamp.IsZero() {
			return
		}
		for _, id := range ids {
			if slices.ContainsFunc(carries, id.same) && !slices.ContainsFunc(kept, id.same) {
				kept = append(kept, id)
			}
		}
	})
	return kept, nil
}
