// Package estimator is flotilla-estimator's runtime: it watches the member's
// Nodes and Pods with informers and publishes the capacity model built by
// internal/estimator to the ConfigMap flotilla-system/flotilla-capacity-model,
// where the hub reads it with its scoped identity — one read per member and
// sync period, never a call per scheduling decision.
package estimator

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/estimator"
)

// QuantaKey holds, next to the model, the quanta it was built with (JSON).
const QuantaKey = "quanta"

// Config configures the publisher.
type Config struct {
	// Namespace and ConfigMap name where the model is published.
	Namespace, ConfigMap string
	// PublishInterval is the debounce: the model is published at most this
	// often, however fast Nodes and Pods change.
	PublishInterval time.Duration
	// MaxStaleness republishes an unchanged model this often, so that its
	// ObservedTime tells the hub the estimator is alive.
	MaxStaleness time.Duration
	// Model tunes the model (ignored labels, quanta, size bound).
	Model estimator.Options
	// Clock is time.Now when nil.
	Clock func() time.Time
}

// Run publishes the model of the cluster cs talks to until ctx ends.
func Run(ctx context.Context, cs kubernetes.Interface, cfg Config) error {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.PublishInterval <= 0 {
		return fmt.Errorf("publish interval must be positive, got %s", cfg.PublishInterval)
	}
	if cfg.MaxStaleness < cfg.PublishInterval {
		cfg.MaxStaleness = 5 * time.Minute
	}
	nodeFactory := informers.NewSharedInformerFactory(cs, 0)
	// Terminal Pods free their requests: leave them out of the watch, which
	// for a busy cluster is most of the Pods the apiserver still holds.
	podFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
	}))
	nodes, pods := nodeFactory.Core().V1().Nodes(), podFactory.Core().V1().Pods()

	var dirty atomic.Bool
	dirty.Store(true)
	mark := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { dirty.Store(true) },
		UpdateFunc: func(any, any) { dirty.Store(true) },
		DeleteFunc: func(any) { dirty.Store(true) },
	}
	for _, inf := range []cache.SharedIndexInformer{nodes.Informer(), pods.Informer()} {
		if err := inf.SetTransform(slim); err != nil {
			return fmt.Errorf("set informer transform: %w", err)
		}
		if _, err := inf.AddEventHandler(mark); err != nil {
			return fmt.Errorf("add event handler: %w", err)
		}
	}
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	defer podFactory.Shutdown()
	for _, synced := range []map[reflect.Type]bool{nodeFactory.WaitForCacheSync(ctx.Done()), podFactory.WaitForCacheSync(ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				return fmt.Errorf("informer for %v did not sync", typ)
			}
		}
	}

	p := &publisher{cs: cs, cfg: cfg}
	ticker := time.NewTicker(cfg.PublishInterval)
	defer ticker.Stop()
	for {
		if dirty.Swap(false) || cfg.Clock().Sub(p.lastPublished) >= cfg.MaxStaleness {
			nodeList, err := nodes.Lister().List(labels.Everything())
			if err != nil {
				return fmt.Errorf("list nodes from cache: %w", err)
			}
			podList, err := pods.Lister().List(labels.Everything())
			if err != nil {
				return fmt.Errorf("list pods from cache: %w", err)
			}
			if err := p.publish(ctx, estimator.Build(nodeList, podList, cfg.Clock(), cfg.Model)); err != nil {
				// Try again next tick: the model is rebuilt from the caches anyway.
				dirty.Store(true)
				klog.FromContext(ctx).Error(err, "Publishing the capacity model failed")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// publisher writes the model and remembers what it last wrote.
type publisher struct {
	cs            kubernetes.Interface
	cfg           Config
	last          map[string]string
	lastPublished time.Time
}

func (p *publisher) publish(ctx context.Context, res estimator.Result) error {
	data, err := encode(res)
	if err != nil {
		return err
	}
	stale := p.cfg.Clock().Sub(p.lastPublished) >= p.cfg.MaxStaleness
	if !stale && sameBesidesTime(p.last, data) {
		return nil
	}
	cms := p.cs.CoreV1().ConfigMaps(p.cfg.Namespace)
	cm, err := cms.Get(ctx, p.cfg.ConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: p.cfg.ConfigMap, Namespace: p.cfg.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "flotilla-estimator"}},
			Data:       data,
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap %s/%s: %w", p.cfg.Namespace, p.cfg.ConfigMap, err)
		}
	case err != nil:
		return fmt.Errorf("get ConfigMap %s/%s: %w", p.cfg.Namespace, p.cfg.ConfigMap, err)
	default:
		cm.Data = data
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update ConfigMap %s/%s: %w", p.cfg.Namespace, p.cfg.ConfigMap, err)
		}
	}
	p.last, p.lastPublished = data, p.cfg.Clock()
	klog.FromContext(ctx).V(2).Info("Published the capacity model", "groups", len(res.Model.NodeGroups), "pods", res.Model.ObservedPods)
	return nil
}

func encode(res estimator.Result) (map[string]string, error) {
	data := map[string]string{}
	for key, v := range map[string]any{
		clusterv1alpha1.CapacityModelKey:   res.Model,
		clusterv1alpha1.NodeSummaryKey:     res.NodeSummary,
		clusterv1alpha1.ResourceSummaryKey: res.ResourceSummary,
		QuantaKey:                          res.Quanta,
	} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", key, err)
		}
		data[key] = string(b)
	}
	return data, nil
}

// sameBesidesTime compares two encodings ignoring the model's ObservedTime,
// so that an unchanged cluster is not republished every tick.
func sameBesidesTime(a, b map[string]string) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if k == clusterv1alpha1.CapacityModelKey {
			var ma, mb clusterv1alpha1.CapacityModel
			if json.Unmarshal([]byte(v), &ma) != nil || json.Unmarshal([]byte(b[k]), &mb) != nil {
				return false
			}
			ma.ObservedTime, mb.ObservedTime = metav1.Time{}, metav1.Time{}
			if !reflect.DeepEqual(ma, mb) {
				return false
			}
			continue
		}
		if b[k] != v {
			return false
		}
	}
	return true
}

// slim keeps what the model needs of Nodes and Pods: a 5,000-node cluster's
// Pods otherwise cost the estimator most of its memory in managed fields,
// env and volumes.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		o.ManagedFields, o.Annotations = nil, nil
		o.Status.Images, o.Status.VolumesAttached, o.Status.VolumesInUse = nil, nil, nil
		return o, nil
	case *corev1.Pod:
		o.ManagedFields, o.Annotations, o.OwnerReferences = nil, nil, nil
		o.Spec.Volumes = nil
		o.Spec.Containers = slimContainers(o.Spec.Containers)
		o.Spec.InitContainers = slimContainers(o.Spec.InitContainers)
		o.Spec.EphemeralContainers = nil
		return o, nil
	}
	return obj, nil
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}
