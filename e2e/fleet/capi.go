package fleet

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/e2e/fleet/provider"
)

// CreateCluster writes the CAPI objects of a member to the hub, as a user
// applying a cluster template would: a Cluster with its FleetCluster and
// FleetControlPlane, and one Machine with its FleetMachine per kwok Node.
// Cluster API's webhooks are not registered on the hub, so every field is set.
func (f *Fleet) CreateCluster(ctx context.Context, m *Member) error {
	hub := f.Hub.Client
	ns := m.Spec.Namespace
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	name := m.Spec.Name
	port, err := strconv.Atoi(m.Server()[len("https://127.0.0.1:"):])
	if err != nil {
		return fmt.Errorf("member %s endpoint %s: %w", name, m.Server(), err)
	}

	infra := providerObject(provider.ClusterKind, ns, name)
	infra.Object["spec"] = map[string]any{"controlPlaneEndpoint": map[string]any{"host": "127.0.0.1", "port": int64(port)}}
	cp := providerObject(provider.ControlPlaneKind, ns, name)
	cp.Object["spec"] = map[string]any{"version": KubernetesVersion, "replicas": int64(1)}
	for _, obj := range []client.Object{infra, cp} {
		if err := hub.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("create %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, ns, name, err)
		}
	}

	labels := map[string]string{}
	for k, v := range m.Spec.Labels {
		labels[k] = v
	}
	cluster := &capiv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: m.Spec.Annotations},
		Spec: capiv1.ClusterSpec{
			ClusterNetwork: capiv1.ClusterNetwork{
				Pods:     capiv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
				Services: capiv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/16"}},
			},
			ControlPlaneRef:   capiv1.ContractVersionedObjectReference{APIGroup: provider.ControlPlaneGroup, Kind: provider.ControlPlaneKind, Name: name},
			InfrastructureRef: capiv1.ContractVersionedObjectReference{APIGroup: provider.InfrastructureGroup, Kind: provider.ClusterKind, Name: name},
		},
	}
	if err := hub.Create(ctx, cluster); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("create Cluster %s/%s: %w", ns, name, err)
	}

	for _, node := range m.NodeNames() {
		fm := providerObject(provider.MachineKind, ns, node)
		fm.SetLabels(map[string]string{capiv1.ClusterNameLabel: name})
		fm.Object["spec"] = map[string]any{"providerID": m.ProviderID(node)}
		if err := hub.Create(ctx, fm); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("create FleetMachine %s/%s: %w", ns, node, err)
		}
		machine := &capiv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: node, Labels: map[string]string{capiv1.ClusterNameLabel: name}},
			Spec: capiv1.MachineSpec{
				ClusterName:       name,
				Version:           KubernetesVersion,
				Bootstrap:         capiv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap-unused")},
				InfrastructureRef: capiv1.ContractVersionedObjectReference{APIGroup: provider.InfrastructureGroup, Kind: provider.MachineKind, Name: node},
			},
		}
		if err := hub.Create(ctx, machine); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("create Machine %s/%s: %w", ns, node, err)
		}
	}
	return nil
}

func providerObject(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(provider.GVK(kind))
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// Cluster returns the member's CAPI Cluster as the hub holds it.
func (f *Fleet) Cluster(ctx context.Context, m *Member) (*capiv1.Cluster, error) {
	c := &capiv1.Cluster{}
	err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: m.Spec.Namespace, Name: m.Spec.Name}, c)
	return c, err
}
