// Package estimator builds a member's compact capacity model from its Nodes
// and Pods: schedulable Ready Nodes grouped by scheduling-relevant labels,
// taints and free resources per Node. flotilla-estimator (addon/estimator)
// feeds it from informers and publishes the result; this package is pure so
// that the model's exactness is unit- and property-tested without an apiserver.
//
// Exactness. A Node's free amount of a resource is its allocatable less the
// requests of the non-terminal Pods bound to it (the kube-scheduler's own
// accounting, via k8s.io/component-helpers), and "pods" less one per such Pod.
// Free amounts are rounded DOWN to a quantum (default 10m CPU, 1Mi memory and
// ephemeral storage; other resources exact) so that nearly identical Nodes
// share a group. Rounding down never overstates capacity, and for a request
// that is a multiple of the quantum floor(q·⌊f/q⌋ / r) = floor(f / r), so the
// fit of such requests is exact; other requests get a lower bound.
//
// Size. A group is about 1 KiB of JSON with a cloud Node's dozen labels, so
// the model is bounded by MaxGroups (default 500, about 0.5 MiB, well inside
// the 1.5 MiB an apiserver accepts for the ConfigMap and MemberCluster status
// that carry it). When more groups remain, the quanta double — still rounding
// down, so the model stays a lower bound — until the bound holds; the quanta
// used are reported with the model. Labels and taints are never merged: when
// the Nodes have more distinct (labels, taints) classes than MaxGroups, no
// coarsening can reach the bound, so none is done and the model is published
// at the base quanta, over the bound.
package estimator

import (
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Options tune the model.
type Options struct {
	// IgnoredLabels are Node label keys left out of groups because they differ
	// per Node: kept, they would make every Node its own group. A requirement
	// that selects on one of them gets no fit from the model.
	IgnoredLabels []string

	// Quanta round each Node's free amount of a resource down to a multiple
	// of the quantum. Resources without a quantum are exact.
	Quanta corev1.ResourceList

	// MaxGroups bounds the number of groups (see the package doc); 0 means
	// no bound.
	MaxGroups int
}

// DefaultOptions: hostname ignored, 10m CPU, 1Mi memory and ephemeral
// storage, at most 500 groups.
func DefaultOptions() Options {
	return Options{
		IgnoredLabels: []string{corev1.LabelHostname},
		Quanta: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("10m"),
			corev1.ResourceMemory:           resource.MustParse("1Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Mi"),
		},
		MaxGroups: 500,
	}
}

// Result is a member's capacity as published by the estimator.
type Result struct {
	Model           clusterv1alpha1.CapacityModel
	NodeSummary     clusterv1alpha1.NodeSummary
	ResourceSummary clusterv1alpha1.ResourceSummary
	// Quanta are the quanta the model was built with, after any doubling.
	Quanta corev1.ResourceList
}

// node is one schedulable Ready Node's shape and usage, in milli-units.
type node struct {
	labels map[string]string
	taints []corev1.Taint
	alloc  map[corev1.ResourceName]int64
	used   map[corev1.ResourceName]int64
	pods   int64
}

// Build computes the capacity model of a cluster from its Nodes and Pods.
func Build(nodes []*corev1.Node, pods []*corev1.Pod, observed time.Time, opts Options) Result {
	res := Result{}
	res.NodeSummary.TotalNum = int32(len(nodes))

	ignored := make(map[string]bool, len(opts.IgnoredLabels))
	for _, k := range opts.IgnoredLabels {
		ignored[k] = true
	}
	byName := make(map[string]*node, len(nodes))
	allocatable := map[corev1.ResourceName]int64{}
	for _, n := range nodes {
		if !isReady(n) {
			continue
		}
		res.NodeSummary.ReadyNum++
		if n.Spec.Unschedulable {
			continue
		}
		s := &node{labels: schedulingLabels(n.Labels, ignored), taints: repellingTaints(n.Spec.Taints), alloc: milliOf(n.Status.Allocatable), used: map[corev1.ResourceName]int64{}}
		byName[n.Name] = s
		addTo(allocatable, s.alloc)
	}

	allocated, allocating := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	bound := map[string]int32{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		res.Model.ObservedPods++
		req := milliOf(podRequests(p))
		if p.Spec.NodeName == "" {
			addTo(allocating, req)
			continue
		}
		bound[p.Namespace]++
		s, ok := byName[p.Spec.NodeName]
		if !ok {
			continue // bound to a Node that takes no new Pods: not free capacity
		}
		addTo(s.used, req)
		s.pods++
		addTo(allocated, req)
	}

	free := make([]map[corev1.ResourceName]int64, 0, len(byName))
	shapes := make([]*node, 0, len(byName))
	for _, name := range sortedKeys(byName) {
		s := byName[name]
		shapes = append(shapes, s)
		free = append(free, freeOf(s))
	}

	quanta := milliOf(opts.Quanta)
	reachable := opts.MaxGroups > 0 && classes(shapes) <= opts.MaxGroups
	var groups []clusterv1alpha1.NodeGroup
	for factor := int64(1); ; factor *= 2 {
		scaled := scale(quanta, factor)
		groups = group(shapes, free, scaled)
		if !reachable || len(groups) <= opts.MaxGroups || !coarserMerges(free, scaled) || factor > 1<<40 {
			res.Quanta = listOf(scaled)
			break
		}
	}
	res.Model.ObservedTime = metav1.NewTime(observed)
	res.Model.NodeGroups = groups
	res.Model.BoundPods = largest(bound, clusterv1alpha1.MaxBoundPodNamespaces)
	res.ResourceSummary = clusterv1alpha1.ResourceSummary{Allocatable: listOf(allocatable), Allocated: listOf(allocated), Allocating: listOf(allocating)}
	return res
}

// podRequests is what the kube-scheduler reserves for p: containers, init and
// sidecar containers, overhead, pod-level resources and in-place resizes.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true})
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func schedulingLabels(labels map[string]string, ignored map[string]bool) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if !ignored[k] {
			out[k] = v
		}
	}
	return out
}

// repellingTaints keeps the taints a Pod must tolerate (PreferNoSchedule only
// steers) without TimeAdded, which differs per Node and means nothing to fit.
func repellingTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	sort.Slice(out, func(i, j int) bool { return taintKey(out[i]) < taintKey(out[j]) })
	return out
}

func taintKey(t corev1.Taint) string { return t.Key + "=" + t.Value + ":" + string(t.Effect) }

// freeOf is allocatable less used, clamped at zero; "pods" counts Pods.
func freeOf(s *node) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(s.alloc))
	for name, a := range s.alloc {
		u := s.used[name]
		if name == corev1.ResourcePods {
			u = s.pods * 1000
		}
		out[name] = max(a-u, 0)
	}
	return out
}

// group buckets Nodes by labels, taints and quantised free amounts, in a
// deterministic order.
func group(shapes []*node, free []map[corev1.ResourceName]int64, quanta map[corev1.ResourceName]int64) []clusterv1alpha1.NodeGroup {
	byKey := map[string]*clusterv1alpha1.NodeGroup{}
	var b strings.Builder
	for i, s := range shapes {
		f := quantise(free[i], quanta)
		b.Reset()
		for _, k := range sortedKeys(s.labels) {
			b.WriteString(k + "=" + s.labels[k] + "\x00")
		}
		b.WriteString("\x01")
		for _, t := range s.taints {
			b.WriteString(taintKey(t) + "\x00")
		}
		b.WriteString("\x01")
		for _, name := range sortedKeys(f) {
			b.WriteString(string(name) + "=" + strconv.FormatInt(f[name], 10) + "\x00")
		}
		key := b.String()
		if g, ok := byKey[key]; ok {
			g.Count++
			continue
		}
		byKey[key] = &clusterv1alpha1.NodeGroup{Count: 1, Labels: s.labels, Taints: s.taints, Free: listOf(f)}
	}
	out := make([]clusterv1alpha1.NodeGroup, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		out = append(out, *byKey[k])
	}
	return out
}

// classes counts the distinct (labels, taints) shapes: the fewest groups any
// quantum can reach.
func classes(shapes []*node) int {
	return len(group(shapes, make([]map[corev1.ResourceName]int64, len(shapes)), nil))
}

func quantise(free, quanta map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(free))
	for name, v := range free {
		if q := quanta[name]; q > 0 {
			v -= v % q
		}
		out[name] = v
	}
	return out
}

// coarserMerges reports whether doubling the quanta can still change
// anything: some quantised resource has a free amount of at least its current
// quantum (smaller amounts round to zero under any coarser quantum too).
func coarserMerges(free []map[corev1.ResourceName]int64, quanta map[corev1.ResourceName]int64) bool {
	for _, f := range free {
		for name, q := range quanta {
			if q > 0 && f[name] >= q {
				return true
			}
		}
	}
	return false
}

func scale(quanta map[corev1.ResourceName]int64, factor int64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(quanta))
	for name, q := range quanta {
		out[name] = q * factor
	}
	return out
}

func milliOf(list corev1.ResourceList) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(list))
	for name, q := range list {
		out[name] = q.MilliValue()
	}
	return out
}

func addTo(sum, add map[corev1.ResourceName]int64) {
	for name, v := range add {
		sum[name] += v
	}
}

// listOf turns milli-amounts back into quantities: whole amounts of byte
// resources in binary notation (1Mi), others in decimal (10m, 4).
func listOf(m map[corev1.ResourceName]int64) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(m))
	for name, v := range m {
		switch {
		case v%1000 != 0:
			out[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		case isBytes(name):
			out[name] = *resource.NewQuantity(v/1000, resource.BinarySI)
		default:
			out[name] = *resource.NewQuantity(v/1000, resource.DecimalSI)
		}
	}
	return out
}

func isBytes(name corev1.ResourceName) bool {
	return name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// largest keeps the n namespaces with the most bound Pods (ties by name), nil
// when there are none: the hub holds capacity longer for a namespace left
// out, so the bound only ever errs on the safe side.
func largest(counts map[string]int32, n int) map[string]int32 {
	if len(counts) == 0 {
		return nil
	}
	if len(counts) <= n {
		return counts
	}
	names := sortedKeys(counts)
	sort.SliceStable(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	kept := make(map[string]int32, n)
	for _, name := range names[:n] {
		kept[name] = counts[name]
	}
	return kept
}
