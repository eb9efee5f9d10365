package interpreter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	vfield "k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter/luavm"
)

// Operation is one customization field and the Lua function its script
// must define.
type Operation struct {
	Field    string
	Function string
	script   func(*configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript
}

// Operations are the customization fields Flotilla runs, in the order of
// the API.
var Operations = []Operation{
	{"retention", "Retain", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript { return r.Retention }},
	{"replicaResource", "GetReplicas", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript { return r.ReplicaResource }},
	{"replicaRevision", "ReviseReplica", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript { return r.ReplicaRevision }},
	{"statusReflection", "ReflectStatus", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript { return r.StatusReflection }},
	{"statusAggregation", "AggregateStatus", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript { return r.StatusAggregation }},
	{"healthInterpretation", "InterpretHealth", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript { return r.HealthInterpretation }},
	{"dependencyInterpretation", "GetDependencies", func(r *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript {
		return r.DependencyInterpretation
	}},
}

// Script returns the operation's script in rules, nil when unset.
func (o Operation) Script(rules *configv1alpha1.CustomizationRules) *configv1alpha1.LuaScript {
	return o.script(rules)
}

// ValidateCustomization checks a customization before it is stored: a
// target that names a kind, and every script compiling and defining the
// function of its operation. The error names the field and quotes Lua's
// message, so that a broken script never reaches the controllers.
func ValidateCustomization(vm *luavm.VM, spec *configv1alpha1.ResourceInterpreterCustomizationSpec) vfield.ErrorList {
	var errs vfield.ErrorList
	target := vfield.NewPath("spec", "target")
	if _, err := schema.ParseGroupVersion(spec.Target.APIVersion); err != nil || spec.Target.APIVersion == "" {
		errs = append(errs, vfield.Invalid(target.Child("apiVersion"), spec.Target.APIVersion, "must be group/version, or version for the core group"))
	}
	if spec.Target.Kind == "" {
		errs = append(errs, vfield.Required(target.Child("kind"), "the kind the customization applies to"))
	}
	rules := vfield.NewPath("spec", "customizations")
	for _, op := range Operations {
		s := op.Script(&spec.Customizations)
		if s == nil {
			continue
		}
		if err := vm.Compile(s.LuaScript, op.Function); err != nil {
			errs = append(errs, vfield.Invalid(rules.Child(op.Field, "luaScript"), "(script)",
				fmt.Sprintf("must define function %s: %v", op.Function, err)))
		}
	}
	return errs
}

// NotActedUpon lists the fields of rules Flotilla accepts for Karmada
// compatibility and does not run yet.
func NotActedUpon(rules *configv1alpha1.CustomizationRules) []string {
	var fields []string
	if rules.ComponentResource != nil {
		fields = append(fields, "componentResource")
	}
	if rules.ComponentRevision != nil {
		fields = append(fields, "componentRevision")
	}
	return fields
}
