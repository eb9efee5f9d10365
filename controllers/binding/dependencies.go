package binding

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dependent is an object a binding's Works carry besides its template
// (propagateDeps).
type dependent struct {
	Kind      string
	Namespace string
	Name      string
}

// bindingKey names a binding: Kind is ResourceBinding or ClusterResourceBinding.
type bindingKey struct {
	Kind string
	client.ObjectKey
}

// dependencyIndex remembers which bindings read which dependencies at
// their last rendering, so that a change to a ConfigMap re-renders the
// Works that carry it. It lives in memory: after a restart every binding
// renders once and fills it again.
type dependencyIndex struct {
	mu      sync.Mutex
	byDep   map[dependent]map[bindingKey]bool
	byOwner map[bindingKey][]dependent
}

// Set replaces what binding depends on.
func (d *dependencyIndex) Set(binding bindingKey, deps []dependent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byDep == nil {
		d.byDep = map[dependent]map[bindingKey]bool{}
		d.byOwner = map[bindingKey][]dependent{}
	}
	for _, dep := range d.byOwner[binding] {
		delete(d.byDep[dep], binding)
		if len(d.byDep[dep]) == 0 {
			delete(d.byDep, dep)
		}
	}
	delete(d.byOwner, binding)
	if len(deps) == 0 {
		return
	}
	d.byOwner[binding] = deps
	for _, dep := range deps {
		if d.byDep[dep] == nil {
			d.byDep[dep] = map[bindingKey]bool{}
		}
		d.byDep[dep][binding] = true
	}
}

// Dependents lists the bindings that depend on dep.
func (d *dependencyIndex) Dependents(dep dependent) []bindingKey {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]bindingKey, 0, len(d.byDep[dep]))
	for b := range d.byDep[dep] {
		out = append(out, b)
	}
	return out
}
