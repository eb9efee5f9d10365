package agent_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	utilresource "sigs.k8s.io/cluster-api/util/resource"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
)

// edgeResourceSet applies the ConfigMaps of the edge member's agent
// ClusterResourceSet into the member as Cluster API's ClusterResourceSet
// controller does with strategy Reconcile: each resource again when its
// content changed, its keys in sorted order, the objects of a key sorted
// for creation, each created or merge-patched as the member's admin. (The
// member of this suite is shared with the Cluster "other", so Cluster API's
// controller itself cannot run here; the e2e suite runs it.) Deployments
// are left out: the agent runs in-process. It can be held, to see the agent
// before a grant arrives.
var edgeResourceSet = &resourceSet{name: "flotilla-agent-" + edge, applied: map[string][32]byte{}}

type resourceSet struct {
	name string

	mu      sync.Mutex
	held    bool
	applied map[string][32]byte
}

// hold stops applying until the returned function is called.
func (r *resourceSet) hold() (release func()) {
	r.mu.Lock()
	r.held = true
	r.mu.Unlock()
	return func() { r.mu.Lock(); r.held = false; r.mu.Unlock() }
}

func (r *resourceSet) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.sync(ctx); err != nil && ctx.Err() == nil && os.Getenv("FLOTILLA_TEST_LOG") != "" {
			fmt.Fprintln(os.Stderr, "resource set:", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *resourceSet) sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held {
		return nil
	}
	crs := &addonsv1.ClusterResourceSet{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterNS, Name: r.name}, crs); err != nil {
		return err
	}
	for _, ref := range crs.Spec.Resources {
		if ref.Kind != string(addonsv1.ConfigMapClusterResourceSetResourceKind) {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterNS, Name: ref.Name}, cm); err != nil {
			return err
		}
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h := sha256.New()
		var objs []unstructured.Unstructured
		for _, k := range keys {
			h.Write([]byte(cm.Data[k]))
			docs, err := utilyaml.ToUnstructured([]byte(cm.Data[k]))
			if err != nil {
				return err
			}
			objs = append(objs, utilresource.SortForCreate(docs)...)
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		if r.applied[ref.Name] == sum {
			continue
		}
		for i := range objs {
			if objs[i].GetKind() == "Deployment" {
				continue
			}
			if err := applyAsResourceSet(ctx, &objs[i]); err != nil {
				return err
			}
		}
		r.applied[ref.Name] = sum
	}
	return nil
}

// applyAsResourceSet creates obj, or merge-patches the existing object to
// it, as the Reconcile strategy does.
func applyAsResourceSet(ctx context.Context, obj *unstructured.Unstructured) error {
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(obj.GroupVersionKind())
	err := memberAdmin.Get(ctx, client.ObjectKeyFromObject(obj), current)
	if apierrors.IsNotFound(err) {
		return memberAdmin.Create(ctx, obj)
	}
	if err != nil {
		return err
	}
	patch := client.MergeFrom(current.DeepCopy())
	obj.SetResourceVersion(current.GetResourceVersion())
	return memberAdmin.Patch(ctx, obj, patch)
}
