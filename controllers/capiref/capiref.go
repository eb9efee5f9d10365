// Package capiref links a MemberCluster and the CAPI objects it comes from:
// its Cluster (spec.clusterRef) and that Cluster's Machines, in both
// directions, for the controllers that watch CAPI objects on a member's
// behalf (health, taint policies, the drain hook).
package capiref

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// ClusterOf reads the member's CAPI Cluster; nil when it does not exist.
func ClusterOf(ctx context.Context, c client.Reader, m *clusterv1alpha1.MemberCluster) (*capiv1.Cluster, error) {
	ref := m.Spec.ClusterRef
	cluster := &capiv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read Cluster %s/%s of member %s: %w", ref.Namespace, ref.Name, m.Name, err)
	}
	return cluster, nil
}

// MachinesOf lists the Machines of the member's CAPI Cluster.
func MachinesOf(ctx context.Context, c client.Reader, m *clusterv1alpha1.MemberCluster) ([]capiv1.Machine, error) {
	ref := m.Spec.ClusterRef
	list := &capiv1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(ref.Namespace), client.MatchingLabels{capiv1.ClusterNameLabel: ref.Name}); err != nil {
		return nil, fmt.Errorf("list Machines of Cluster %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return list.Items, nil
}

// MemberName is the name of a Cluster's member as enrolment recorded it
// (the flotilla.io/member label, else the member-name annotation); empty
// when the Cluster has none.
func MemberName(c client.Object) string {
	if n := c.GetLabels()[clusterv1alpha1.MemberLabel]; n != "" {
		return n
	}
	return c.GetAnnotations()[clusterv1alpha1.MemberNameAnnotation]
}

// ClusterToMember maps a CAPI Cluster to its member.
func ClusterToMember(_ context.Context, c client.Object) []reconcile.Request {
	if n := MemberName(c); n != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: n}}}
	}
	return nil
}

// MachineToMember maps a Machine to the member of its Cluster.
func MachineToMember(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[capiv1.ClusterNameLabel]
		if name == "" {
			return nil
		}
		cluster := &capiv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cluster); err != nil {
			return nil
		}
		return ClusterToMember(ctx, cluster)
	}
}

// ExecutionNamespaceToMember maps an object in flotilla-es-<member> to the member.
func ExecutionNamespaceToMember(_ context.Context, o client.Object) []reconcile.Request {
	if n, ok := strings.CutPrefix(o.GetNamespace(), clusterv1alpha1.ExecutionNamespacePrefix); ok && n != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: n}}}
	}
	return nil
}
