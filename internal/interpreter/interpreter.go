package interpreter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter/luavm"
)

// Interpreter answers the operations for every kind: a
// ResourceInterpreterCustomization's script where one is loaded for the
// object's kind and operation, the built-in behaviour otherwise. A nil
// *Interpreter is the built-in interpreter alone. Safe for concurrent use;
// Load swaps the customizations atomically.
type Interpreter struct {
	vm    *luavm.VM
	rules atomic.Pointer[map[schema.GroupVersionKind]*customization]
}

// New returns an interpreter running customizations' scripts in vm, with
// none loaded yet.
func New(vm *luavm.VM) *Interpreter {
	i := &Interpreter{vm: vm}
	i.rules.Store(&map[schema.GroupVersionKind]*customization{})
	return i
}

// script is one operation's Lua script and the customization it came from.
type script struct {
	text string
	from string
}

func (s script) set() bool { return s.text != "" }

// customization is what the customizations of one kind say, merged.
type customization struct {
	retain, replicas, revise, reflect, aggregate, health script
	dependencies                                         []script
}

// Load replaces the customizations in force. As in Karmada, customizations
// are taken in name order: each operation comes from the first that sets
// it, and every dependency script runs.
func (i *Interpreter) Load(list []configv1alpha1.ResourceInterpreterCustomization) {
	sorted := slices.Clone(list)
	slices.SortFunc(sorted, func(a, b configv1alpha1.ResourceInterpreterCustomization) int { return strings.Compare(a.Name, b.Name) })
	rules := map[schema.GroupVersionKind]*customization{}
	for _, ric := range sorted {
		gvk := schema.FromAPIVersionAndKind(ric.Spec.Target.APIVersion, ric.Spec.Target.Kind)
		c := rules[gvk]
		if c == nil {
			c = &customization{}
			rules[gvk] = c
		}
		take := func(into *script, from *configv1alpha1.LuaScript) {
			if from != nil && from.LuaScript != "" && !into.set() {
				*into = script{text: from.LuaScript, from: ric.Name}
			}
		}
		r := ric.Spec.Customizations
		take(&c.retain, r.Retention)
		take(&c.replicas, r.ReplicaResource)
		take(&c.revise, r.ReplicaRevision)
		take(&c.reflect, r.StatusReflection)
		take(&c.aggregate, r.StatusAggregation)
		take(&c.health, r.HealthInterpretation)
		if d := r.DependencyInterpretation; d != nil && d.LuaScript != "" {
			c.dependencies = append(c.dependencies, script{text: d.LuaScript, from: ric.Name})
		}
	}
	i.rules.Store(&rules)
}

// customized returns what the loaded customizations say of obj's kind.
func (i *Interpreter) customized(obj *unstructured.Unstructured) *customization {
	if i == nil || obj == nil {
		return nil
	}
	return (*i.rules.Load())[obj.GroupVersionKind()]
}

// Customized reports whether a customization is loaded for obj's kind.
func (i *Interpreter) Customized(obj *unstructured.Unstructured) bool {
	return i.customized(obj) != nil
}

// ScriptError is a customization's script failing: its error is shown as
// is in conditions, events and Work statuses.
type ScriptError struct {
	// Customization is the ResourceInterpreterCustomization's name.
	Customization string
	// Operation is the customization field, e.g. replicaResource.
	Operation string
	Err       error
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("ResourceInterpreterCustomization %s, %s: %v", e.Customization, e.Operation, e.Err)
}

func (e *ScriptError) Unwrap() error { return e.Err }

func failed(s script, operation string, err error) error {
	if err == nil {
		return nil
	}
	return &ScriptError{Customization: s.from, Operation: operation, Err: err}
}

// HasReplicas reports whether obj carries a replica count Flotilla divides.
func (i *Interpreter) HasReplicas(obj *unstructured.Unstructured) bool {
	if c := i.customized(obj); c != nil && c.replicas.set() {
		return true
	}
	return HasReplicas(obj)
}

// GetReplicas returns obj's desired replicas and what one replica needs.
func (i *Interpreter) GetReplicas(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	if c := i.customized(obj); c != nil && c.replicas.set() {
		n, rr, err := i.vm.GetReplicas(ctx, c.replicas.text, obj)
		if err != nil {
			return 0, nil, failed(c.replicas, "replicaResource", err)
		}
		if n < 0 {
			return 0, nil, failed(c.replicas, "replicaResource", fmt.Errorf("GetReplicas returned %d replicas", n))
		}
		if rr != nil && rr.Namespace == "" {
			rr.Namespace = obj.GetNamespace()
		}
		return n, rr, nil
	}
	return GetReplicas(obj)
}

// Pods is how many Pods obj, an object rendered into a member, makes there
// and what one requests, for quota: the replicas a customization reads, or
// the built-in Pods.
func (i *Interpreter) Pods(ctx context.Context, obj *unstructured.Unstructured) (int64, *workv1alpha1.ReplicaRequirements, bool, error) {
	if c := i.customized(obj); c != nil && c.replicas.set() {
		n, rr, err := i.GetReplicas(ctx, obj)
		return int64(n), rr, err == nil, err
	}
	return Pods(obj)
}

// ReviseReplica writes a member's share of replicas into obj, the
// template rendered for it. It reports false, and changes nothing, for
// kinds without replicas.
func (i *Interpreter) ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (bool, error) {
	c := i.customized(obj)
	switch {
	case c != nil && c.revise.set():
		revised, err := i.vm.ReviseReplica(ctx, c.revise.text, obj, int64(replicas))
		if err == nil {
			err = sameObject(obj, revised)
		}
		if err != nil {
			return false, failed(c.revise, "replicaRevision", err)
		}
		obj.Object = revised.Object
		return true, nil
	case c != nil && c.replicas.set():
		return false, failed(c.replicas, "replicaResource", fmt.Errorf(
			"reads the replicas of %s but no customization of it sets replicaRevision: Flotilla cannot write a member's share", obj.GetKind()))
	}
	return ReviseReplica(obj, replicas)
}

// Retain keeps in desired, the object about to be applied to a
// member, what the member owns in observed, the object it holds: the
// customization's retention script first, then the replica field another
// field manager owns there (Retain). It returns those managers.
func (i *Interpreter) Retain(ctx context.Context, desired, observed *unstructured.Unstructured, fieldManager string) ([]string, error) {
	if c := i.customized(desired); c != nil && c.retain.set() && observed != nil {
		retained, err := i.vm.Retain(ctx, c.retain.text, desired, observed)
		if err == nil {
			err = sameObject(desired, retained)
		}
		if err != nil {
			return nil, failed(c.retain, "retention", err)
		}
		desired.Object = retained.Object
	}
	return Retain(desired, observed, fieldManager), nil
}

// ReflectStatus returns the status the hub keeps of obj, a member's copy.
func (i *Interpreter) ReflectStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	if c := i.customized(obj); c != nil && c.reflect.set() {
		st, err := i.vm.ReflectStatus(ctx, c.reflect.text, obj)
		return st, failed(c.reflect, "statusReflection", err)
	}
	return ReflectStatus(obj)
}

// AggregatesStatus reports whether a customization aggregates the status
// of obj's kind into its templates.
func (i *Interpreter) AggregatesStatus(obj *unstructured.Unstructured) bool {
	c := i.customized(obj)
	return c != nil && c.aggregate.set()
}

// AggregateStatus returns a copy of template with its status folded from
// the members' items; ok is false when neither a customization nor the
// built-in interpreter aggregates its kind.
func (i *Interpreter) AggregateStatus(ctx context.Context, template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, bool, error) {
	if c := i.customized(template); c != nil && c.aggregate.set() {
		out, err := i.vm.AggregateStatus(ctx, c.aggregate.text, template.DeepCopy(), items)
		if err == nil {
			err = sameObject(template, out)
		}
		if err != nil {
			return nil, false, failed(c.aggregate, "statusAggregation", err)
		}
		return out, true, nil
	}
	return AggregateStatus(template, items)
}

// InterpretHealth returns the health of obj, a member's copy, and when
// not Healthy, why. A failing script makes it Unknown with the error.
func (i *Interpreter) InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	if c := i.customized(obj); c != nil && c.health.set() {
		healthy, err := i.vm.InterpretHealth(ctx, c.health.text, obj)
		switch {
		case err != nil:
			return workv1alpha1.ResourceUnknown, failed(c.health, "healthInterpretation", err).Error()
		case !healthy:
			return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("InterpretHealth of ResourceInterpreterCustomization %s returned false", c.health.from)
		}
		return workv1alpha1.ResourceHealthy, ""
	}
	return InterpretHealth(obj)
}

// GetDependencies lists what obj needs propagated with it: the
// customizations' dependency scripts when any is loaded (their results
// joined), the built-in pod-template references otherwise. A script may
// name only the kinds Flotilla propagates as dependencies, by name, in
// obj's own namespace: a template never brings along an object of
// another namespace.
func (i *Interpreter) GetDependencies(ctx context.Context, obj *unstructured.Unstructured) ([]Dependency, error) {
	c := i.customized(obj)
	if c == nil || len(c.dependencies) == 0 {
		return GetDependencies(obj)
	}
	var refs []Dependency
	for _, s := range c.dependencies {
		found, err := i.vm.GetDependencies(ctx, s.text, obj)
		if err != nil {
			return nil, failed(s, "dependencyInterpretation", err)
		}
		for _, d := range found {
			ref, err := dependencyOf(obj, d)
			if err != nil {
				return nil, failed(s, "dependencyInterpretation", err)
			}
			refs = append(refs, ref)
		}
	}
	sortDependencies(refs)
	return slices.Compact(refs), nil
}

// dependencyOf checks one reference a script returned.
func dependencyOf(obj *unstructured.Unstructured, d luavm.Dependency) (Dependency, error) {
	if d.APIVersion != "v1" || !slices.Contains(DependencyKinds, d.Kind) {
		return Dependency{}, fmt.Errorf("dependency %s %s %s: Flotilla propagates %s (v1) as dependencies", d.APIVersion, d.Kind, d.Name,
			strings.Join(DependencyKinds, ", "))
	}
	if d.Namespace != "" && d.Namespace != obj.GetNamespace() {
		return Dependency{}, fmt.Errorf("dependency %s %s/%s is not in %s's namespace %q", d.Kind, d.Namespace, d.Name, obj.GetName(), obj.GetNamespace())
	}
	if d.Name == "" || d.LabelSelector != nil {
		return Dependency{}, fmt.Errorf("dependency %s must name one object (a labelSelector is not supported yet)", d.Kind)
	}
	return Dependency{Kind: d.Kind, Name: d.Name}, nil
}

// sameObject refuses a script's result that is another object than the one
// it was given: a script revises an object, it does not replace it.
func sameObject(given, returned *unstructured.Unstructured) error {
	if returned == nil {
		return fmt.Errorf("the script returned no object")
	}
	if given.GetAPIVersion() != returned.GetAPIVersion() || given.GetKind() != returned.GetKind() ||
		given.GetNamespace() != returned.GetNamespace() || given.GetName() != returned.GetName() {
		return fmt.Errorf("the script returned %s %s %s/%s for %s %s %s/%s: it may change fields, not which object it is",
			returned.GetAPIVersion(), returned.GetKind(), returned.GetNamespace(), returned.GetName(),
			given.GetAPIVersion(), given.GetKind(), given.GetNamespace(), given.GetName())
	}
	return nil
}
