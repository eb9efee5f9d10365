package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The functions a script defines, one per operation, as Karmada names them.
const (
	FuncGetReplicas     = "GetReplicas"
	FuncReviseReplica   = "ReviseReplica"
	FuncRetain          = "Retain"
	FuncAggregateStatus = "AggregateStatus"
	FuncInterpretHealth = "InterpretHealth"
	FuncReflectStatus   = "ReflectStatus"
	FuncGetDependencies = "GetDependencies"
)

// Dependency is Karmada's DependentObjectReference: one object a workload
// needs in the members it is placed on, by name or, with LabelSelector,
// every object of the kind the selector matches.
type Dependency struct {
	APIVersion    string                `json:"apiVersion"`
	Kind          string                `json:"kind"`
	Namespace     string                `json:"namespace,omitempty"`
	Name          string                `json:"name,omitempty"`
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

func objectArg(c *call, obj *unstructured.Unstructured) (lua.LValue, error) {
	if obj == nil {
		return lua.LNil, nil
	}
	v, err := c.conv.toLua(c.L, obj.Object)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s for the script: %w", obj.GetKind(), obj.GetName(), err)
	}
	return v, nil
}

func objects(objs ...*unstructured.Unstructured) func(c *call) ([]lua.LValue, error) {
	return func(c *call) ([]lua.LValue, error) {
		out := make([]lua.LValue, len(objs))
		for i, o := range objs {
			v, err := objectArg(c, o)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
}

func refsOf(objs ...*unstructured.Unstructured) []any {
	var refs []any
	for _, o := range objs {
		if o != nil {
			refs = append(refs, o.Object)
		}
	}
	return refs
}

// objectResult converts a returned object.
func objectResult(c *call, fn string, v lua.LValue, refs ...any) (*unstructured.Unstructured, error) {
	if v.Type() != lua.LTTable {
		return nil, fmt.Errorf("%s returned a %s, want an object table", fn, v.Type())
	}
	out, err := c.conv.fromLua(v, shapeMap, refs...)
	if err != nil {
		return nil, fmt.Errorf("%s returned an object that does not convert: %w", fn, err)
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s returned a list, want an object table", fn)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// GetReplicas runs GetReplicas(obj), which returns the replica count and
// what one replica needs (a ReplicaRequirements table, usually from
// kube.accuratePodRequirements, or nil). A fractional count is truncated,
// as Karmada does. Requirements without a namespace take obj's.
func (vm *VM) GetReplicas(ctx context.Context, script string, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	var (
		n  int32
		rr *workv1alpha1.ReplicaRequirements
	)
	err := vm.run(ctx, FuncGetReplicas, script, 2, objects(obj), func(c *call, rets []lua.LValue) error {
		num, ok := rets[0].(lua.LNumber)
		if !ok {
			return fmt.Errorf("GetReplicas returned replicas of type %s, want a number", rets[0].Type())
		}
		if f := float64(num); math.IsNaN(f) || f < 0 || f > math.MaxInt32 {
			return fmt.Errorf("GetReplicas returned %v replicas, want 0 to %d", f, math.MaxInt32)
		}
		n = int32(num)
		switch t := rets[1].(type) {
		case *lua.LNilType:
		case *lua.LTable:
			rr = &workv1alpha1.ReplicaRequirements{}
			if err := c.conv.into(t, shapeMap, rr); err != nil {
				return fmt.Errorf("GetReplicas returned requirements that are not a ReplicaRequirements: %w", err)
			}
			if rr.Namespace == "" && obj != nil {
				rr.Namespace = obj.GetNamespace()
			}
		default:
			return fmt.Errorf("GetReplicas returned requirements of type %s, want a table or nil", t.Type())
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return n, rr, nil
}

// ReviseReplica runs ReviseReplica(obj, replicas), which returns obj with
// replicas set.
func (vm *VM) ReviseReplica(ctx context.Context, script string, obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := vm.run(ctx, FuncReviseReplica, script, 1, func(c *call) ([]lua.LValue, error) {
		o, err := objectArg(c, obj)
		return []lua.LValue{o, lua.LNumber(replicas)}, err
	}, func(c *call, rets []lua.LValue) (err error) {
		out, err = objectResult(c, FuncReviseReplica, rets[0], refsOf(obj)...)
		return err
	})
	return out, err
}

// Retain runs Retain(desired, observed), which returns desired with the
// fields the member owns taken from observed.
func (vm *VM) Retain(ctx context.Context, script string, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := vm.run(ctx, FuncRetain, script, 1, objects(desired, observed), func(c *call, rets []lua.LValue) (err error) {
		out, err = objectResult(c, FuncRetain, rets[0], refsOf(desired, observed)...)
		return err
	})
	return out, err
}

// AggregateStatus runs AggregateStatus(obj, items), which returns obj with
// the members' statuses aggregated into its status. items is a list of
// tables with Karmada's fields: clusterName, status (the member's status
// object), applied, appliedMessage, health; it is nil when there are no
// items, as in Karmada.
func (vm *VM) AggregateStatus(ctx context.Context, script string, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	list, err := statusItems(items)
	if err != nil {
		return nil, fmt.Errorf("luavm: %s: %w", FuncAggregateStatus, err)
	}
	refs := refsOf(obj)
	for _, it := range list {
		if st, ok := it.(map[string]any)["status"]; ok {
			refs = append(refs, map[string]any{"status": st})
		}
	}
	var out *unstructured.Unstructured
	err = vm.run(ctx, FuncAggregateStatus, script, 1, func(c *call) ([]lua.LValue, error) {
		o, err := objectArg(c, obj)
		if err != nil {
			return nil, err
		}
		var l lua.LValue = lua.LNil
		if len(list) > 0 {
			if l, err = c.conv.toLua(c.L, list); err != nil {
				return nil, fmt.Errorf("converting status items for the script: %w", err)
			}
		}
		return []lua.LValue{o, l}, nil
	}, func(c *call, rets []lua.LValue) (err error) {
		out, err = objectResult(c, FuncAggregateStatus, rets[0], refs...)
		return err
	})
	return out, err
}

func statusItems(items []workv1alpha1.AggregatedStatusItem) ([]any, error) {
	list := make([]any, 0, len(items))
	for _, it := range items {
		m := map[string]any{"clusterName": it.ClusterName, "applied": it.Applied}
		if it.AppliedMessage != "" {
			m["appliedMessage"] = it.AppliedMessage
		}
		if it.Health != "" {
			m["health"] = string(it.Health)
		}
		if st, err := rawJSON(it.Status); err != nil {
			return nil, fmt.Errorf("status of member %s: %w", it.ClusterName, err)
		} else if st != nil {
			m["status"] = st
		}
		list = append(list, m)
	}
	return list, nil
}

func rawJSON(raw *runtime.RawExtension) (any, error) {
	if raw == nil {
		return nil, nil
	}
	data := raw.Raw
	if len(data) == 0 && raw.Object != nil {
		var err error
		if data, err = json.Marshal(raw.Object); err != nil {
			return nil, err
		}
	}
	if len(data) == 0 {
		return nil, nil
	}
	return decodeJSON(data)
}

// InterpretHealth runs InterpretHealth(obj), which returns whether obj is
// healthy.
func (vm *VM) InterpretHealth(ctx context.Context, script string, obj *unstructured.Unstructured) (bool, error) {
	var healthy bool
	err := vm.run(ctx, FuncInterpretHealth, script, 1, objects(obj), func(c *call, rets []lua.LValue) error {
		b, ok := rets[0].(lua.LBool)
		if !ok {
			return fmt.Errorf("InterpretHealth returned a %s, want a boolean", rets[0].Type())
		}
		healthy = bool(b)
		return nil
	})
	return healthy, err
}

// ReflectStatus runs ReflectStatus(obj), which returns the status to
// report, a table. nil, which Karmada refuses, gives a nil status.
func (vm *VM) ReflectStatus(ctx context.Context, script string, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	var out *runtime.RawExtension
	err := vm.run(ctx, FuncReflectStatus, script, 1, objects(obj), func(c *call, rets []lua.LValue) error {
		switch rets[0].Type() {
		case lua.LTNil:
			return nil
		case lua.LTTable:
		default:
			return fmt.Errorf("ReflectStatus returned a %s, want a table", rets[0].Type())
		}
		var refs []any
		if obj != nil {
			if st, ok := obj.Object["status"]; ok {
				refs = append(refs, st)
			}
		}
		v, err := c.conv.fromLua(rets[0], shapeMap, refs...)
		if err != nil {
			return fmt.Errorf("ReflectStatus returned a status that does not convert: %w", err)
		}
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("ReflectStatus returned a status that does not convert: %w", err)
		}
		out = &runtime.RawExtension{Raw: data}
		return nil
	})
	return out, err
}

// GetDependencies runs GetDependencies(obj), which returns a list of
// DependentObjectReference tables (apiVersion, kind, namespace, name,
// labelSelector). nil, which Karmada refuses, means none. Each needs a
// kind and apiVersion, and a name or a labelSelector.
func (vm *VM) GetDependencies(ctx context.Context, script string, obj *unstructured.Unstructured) ([]Dependency, error) {
	var deps []Dependency
	err := vm.run(ctx, FuncGetDependencies, script, 1, objects(obj), func(c *call, rets []lua.LValue) error {
		switch rets[0].Type() {
		case lua.LTNil:
			return nil
		case lua.LTTable:
		default:
			return fmt.Errorf("GetDependencies returned a %s, want a list of tables", rets[0].Type())
		}
		v, err := c.conv.fromLua(rets[0], shapeList)
		if err != nil {
			return fmt.Errorf("GetDependencies returned a value that does not convert: %w", err)
		}
		if _, ok := v.([]any); !ok {
			return errors.New("GetDependencies returned a table with field names, want a list of tables")
		}
		if err := jsonInto(v, &deps); err != nil {
			return fmt.Errorf("GetDependencies returned something else than a list of DependentObjectReference: %w", err)
		}
		for i, d := range deps {
			if d.Kind == "" || d.APIVersion == "" || (d.Name == "" && d.LabelSelector == nil) {
				return fmt.Errorf("GetDependencies returned dependency %d without apiVersion, kind, or name or labelSelector", i+1)
			}
		}
		return nil
	})
	if err != nil || len(deps) == 0 {
		return nil, err
	}
	return deps, nil
}
