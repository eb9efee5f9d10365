package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Apply server-side applies every object of a multi-document YAML to the hub,
// as `kubectl apply --server-side` would.
func (f *Fleet) Apply(ctx context.Context, manifests []byte) error {
	return ApplyTo(ctx, f.Hub.Client, manifests)
}

// ApplyTo server-side applies every object of a multi-document YAML with c
// (the hub's client or a member's).
func ApplyTo(ctx context.Context, c client.Client, manifests []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("flotilla-dev"), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

// WaitMembersReady waits until every member is enrolled and Ready.
func (f *Fleet) WaitMembersReady(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, "members Ready", timeout, func(ctx context.Context) error {
		list := &clusterv1alpha1.MemberClusterList{}
		if err := f.Hub.Client.List(ctx, list); err != nil {
			return err
		}
		ready := map[string]bool{}
		for i := range list.Items {
			m := &list.Items[i]
			if conditions.IsTrue(m, clusterv1alpha1.ConditionReady) && m.Status.CapacityModel != nil {
				ready[m.Spec.ClusterRef.Namespace+"/"+m.Spec.ClusterRef.Name] = true
			}
		}
		for _, m := range f.Members() {
			if !ready[m.Spec.Namespace+"/"+m.Spec.Name] {
				return fmt.Errorf("member of %s/%s is not Ready with a capacity model", m.Spec.Namespace, m.Spec.Name)
			}
		}
		return nil
	})
}

// WaitWorkloadReady waits until the binding of a template is placed, fully
// applied and its replicas Ready in the members; it returns the placement,
// e.g. "member1:4 member2:2".
func (f *Fleet) WaitWorkloadReady(ctx context.Context, namespace, kind, name string, timeout time.Duration) (string, error) {
	var placement string
	err := waitFor(ctx, kind+" "+namespace+"/"+name+" Ready in members", timeout, func(ctx context.Context) error {
		list := &workv1alpha1.ResourceBindingList{}
		if err := f.Hub.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return err
		}
		for i := range list.Items {
			b := &list.Items[i]
			if b.Spec.Resource.Kind != kind || b.Spec.Resource.Name != name {
				continue
			}
			if !conditions.IsTrue(b, workv1alpha1.ConditionFullyApplied) {
				return fmt.Errorf("binding %s not fully applied", b.Name)
			}
			if b.Status.ReadyReplicas != b.Spec.Replicas {
				return fmt.Errorf("binding %s: %d of %d replicas Ready", b.Name, b.Status.ReadyReplicas, b.Spec.Replicas)
			}
			placement = ""
			for _, c := range b.Spec.Clusters {
				placement += fmt.Sprintf("%s:%d ", c.Name, c.Replicas)
			}
			return nil
		}
		return fmt.Errorf("no binding for %s %s/%s yet", kind, namespace, name)
	})
	return strings.TrimSpace(placement), err
}
