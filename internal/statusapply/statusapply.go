// Package statusapply writes the status fields one writer owns in one
// request: a server-side apply of those fields alone, as the writer's own
// field manager. Where several controllers write one object's status (the
// phases of a binding), each owns its fields and its conditions (which
// merge by type); and where one writes it all (a Work's), a status is never
// seen half written — CAPI's patch.Helper writes the conditions and the
// rest of the status in two requests. A write carries the optimistic lock
// of the version it was computed from, unless its writer has no older
// values to put back (a Work's outcome, read from its member).
package statusapply

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply writes fields as the status of the object gvk and key name, as
// manager, taking the fields over from any other manager. fields is
// marshalled to JSON and must hold every field manager owns, zeros and
// empty lists included: a field it owned and leaves out is removed.
//
// resourceVersion is the version the fields were computed from: the write
// is refused with a conflict if the object changed since. Every owned field
// is written, not a difference, so a writer working from a stale cache
// would otherwise put back what it wrote last time over what it wrote
// since (its own record of a decision, say). Empty sends no lock.
func Apply(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, key client.ObjectKey, resourceVersion, manager string, fields any) error {
	raw, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	status := map[string]any{}
	if err := json.Unmarshal(raw, &status); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	u.SetResourceVersion(resourceVersion)
	return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
}
