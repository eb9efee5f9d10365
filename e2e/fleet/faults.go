package fleet

import (
	"context"
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Faults of a member, for tests. Each is real: a stopped process, a Node
// whose kubelet no longer reports, an object deleted through the API.

// StopAPIServer stops the member's kube-apiserver; etcd keeps its state.
func (m *Member) StopAPIServer() error { return m.cp.stopAPIServer() }

// StartAPIServer restarts the member's kube-apiserver on the same port.
func (m *Member) StartAPIServer(ctx context.Context) error { return m.cp.startAPIServer(ctx) }

// FreezeAPIServer stops the member's kube-apiserver with SIGSTOP: its port
// still accepts connections, and nothing answers — a hung member, not a
// refusing one.
func (m *Member) FreezeAPIServer() error { return m.cp.apiserver.signal(syscall.SIGSTOP) }

// ThawAPIServer lets a frozen kube-apiserver run again (SIGCONT).
func (m *Member) ThawAPIServer() error { return m.cp.apiserver.signal(syscall.SIGCONT) }

// SetNodeNotReady stops kwok from acting as the Node's kubelet and reports
// the Node NotReady, as a kubelet that lost its runtime would.
func (m *Member) SetNodeNotReady(ctx context.Context, name string) error {
	node := &corev1.Node{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	patch := client.MergeFrom(node.DeepCopy())
	delete(node.Annotations, kwokNodeAnnotation)
	if err := m.Client.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("release node %s from kwok: %w", name, err)
	}
	statusPatch := client.MergeFrom(node.DeepCopy())
	now := metav1.NewTime(time.Now())
	for i, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			node.Status.Conditions[i] = corev1.NodeCondition{
				Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
				Message: "container runtime is down (fleet fault)", LastHeartbeatTime: now, LastTransitionTime: now,
			}
		}
	}
	return m.Client.Status().Patch(ctx, node, statusPatch)
}

// SetNodeReady hands the Node back to kwok, which reports it Ready again.
func (m *Member) SetNodeReady(ctx context.Context, name string) error {
	node := &corev1.Node{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	patch := client.MergeFrom(node.DeepCopy())
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[kwokNodeAnnotation] = "fake"
	return m.Client.Patch(ctx, node, patch)
}

// DeleteNode deletes a Node from the member.
func (m *Member) DeleteNode(ctx context.Context, name string) error {
	return client.IgnoreNotFound(m.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// DeleteCluster deletes the member's CAPI Cluster on the hub; Cluster API
// then deletes its Machines and infrastructure.
func (f *Fleet) DeleteCluster(ctx context.Context, m *Member) error {
	c := &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: m.Spec.Namespace, Name: m.Spec.Name}}
	return client.IgnoreNotFound(f.Hub.Client.Delete(ctx, c))
}

// PauseCluster sets or clears spec.paused on the member's CAPI Cluster.
func (f *Fleet) PauseCluster(ctx context.Context, m *Member, paused bool) error {
	c, err := f.Cluster(ctx, m)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Paused = ptr.To(paused)
	return f.Hub.Client.Patch(ctx, c, patch)
}
