package v1alpha1

// Labels, annotations and finalizers of bindings, Works and the objects
// Flotilla applies to members (see docs/propagation.md).
const (
	// BindingPermanentIDLabel on a Work carries the UID of the binding it
	// was rendered from, so that a binding's Works are found by label.
	BindingPermanentIDLabel = "work.flotilla.io/binding-permanent-id"
	// BindingKindAnnotation, BindingNamespaceAnnotation and
	// BindingNameAnnotation on a Work name its binding (ResourceBinding or
	// ClusterResourceBinding; the namespace is empty for the latter).
	BindingKindAnnotation      = "work.flotilla.io/binding-kind"
	BindingNamespaceAnnotation = "work.flotilla.io/binding-namespace"
	BindingNameAnnotation      = "work.flotilla.io/binding-name"

	// OverwriteRefusedAnnotation on a Work says why its binding's
	// conflictResolution Overwrite is not honoured (a PropagationPolicy in a
	// namespace without policy.flotilla.io/allow-overwrite=true); the Work's
	// conflictResolution is then Abort, and a conflict's message carries it.
	OverwriteRefusedAnnotation = "work.flotilla.io/overwrite-refused"

	// TemplateContentAnnotation on a binding is a hash of its template as
	// members receive it (binding.Strip: no status, no server-set
	// metadata): spec.resource.resourceVersion follows the template only
	// when that changes, so that the hub's controllers writing a
	// template's status do not make a new binding generation.
	TemplateContentAnnotation = "work.flotilla.io/template-content"

	// RenderedAtAnnotation on a Work is when the binding controller last
	// wrote different manifests (RFC 3339, nanoseconds): the start of the
	// render-to-applied and render-to-healthy latency metrics.
	RenderedAtAnnotation = "work.flotilla.io/rendered-at"

	// ManagedByLabel marks an object in a member as applied by Flotilla,
	// with the value ManagedByValue. An object without it (and without
	// FieldManager among its managers) is the member's own: Flotilla takes
	// it over only under conflictResolution Overwrite, and never deletes it.
	ManagedByLabel = "flotilla.io/managed-by"
	ManagedByValue = "flotilla"

	// FieldManager is the server-side apply field manager of every write
	// Flotilla makes in a member.
	FieldManager = "flotilla"

	// BindingFinalizer holds a binding until its Works are deleted.
	BindingFinalizer = "work.flotilla.io/works"
	// ExecutionFinalizer holds a Work until its objects are removed from the
	// member (unless spec.preserveResourcesOnDeletion).
	ExecutionFinalizer = "work.flotilla.io/execution"
)
