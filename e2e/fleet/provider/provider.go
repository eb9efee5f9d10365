// Package provider is the local fleet's test-only Cluster API infrastructure
// and control-plane provider. It satisfies CAPI's v1beta2 contract for member
// clusters that run as local processes, so that Cluster API itself computes
// Cluster and Machine conditions (RemoteConnectionProbe, ControlPlaneAvailable,
// NodeHealthy, ...) from the real members:
//   - FleetCluster: provisioned, with the member's apiserver as endpoint;
//   - FleetControlPlane: initialized, writes the <cluster>-kubeconfig Secret,
//     and is Available while the member's apiserver answers /readyz;
//   - FleetMachine: provisioned with the providerID of one of the member's
//     kwok Nodes.
package provider

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// CRDs are the provider's CustomResourceDefinitions, as YAML documents.
//
//go:embed crds.yaml
var CRDs []byte

// API groups and kinds of the provider.
const (
	InfrastructureGroup = "infrastructure.test.flotilla.io"
	ControlPlaneGroup   = "controlplane.test.flotilla.io"
	Version             = "v1alpha1"
	ClusterKind         = "FleetCluster"
	MachineKind         = "FleetMachine"
	ControlPlaneKind    = "FleetControlPlane"
)

// GVK returns the GroupVersionKind of one of the provider's kinds.
func GVK(kind string) schema.GroupVersionKind {
	group := InfrastructureGroup
	if kind == ControlPlaneKind {
		group = ControlPlaneGroup
	}
	return schema.GroupVersionKind{Group: group, Version: Version, Kind: kind}
}

// Member is what the provider needs to know of a member cluster.
type Member struct {
	// Kubeconfig is an admin kubeconfig of the member, as CAPI's
	// <cluster>-kubeconfig Secret carries it.
	Kubeconfig []byte
	// KubernetesVersion is the member's version, e.g. v1.36.3.
	KubernetesVersion string
	// Healthy returns nil while the member's control plane serves.
	Healthy func(ctx context.Context) error
}

// Members finds a member by its CAPI Cluster's namespace and name.
type Members interface {
	Lookup(namespace, name string) (Member, bool)
}

// SetupWithManager registers the provider's three reconcilers.
func SetupWithManager(mgr ctrl.Manager, members Members) error {
	r := &reconciler{client: mgr.GetClient(), members: members}
	for kind, fn := range map[string]func(context.Context, *unstructured.Unstructured) (time.Duration, error){
		ClusterKind:      r.reconcileCluster,
		MachineKind:      r.reconcileMachine,
		ControlPlaneKind: r.reconcileControlPlane,
	} {
		gvk, fn := GVK(kind), fn
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := ctrl.NewControllerManagedBy(mgr).
			Named("fleet-" + kind).
			For(obj).
			// A test process may start one fleet after another (make
			// bench-e2e runs every benchmark, each with its own fleet); the
			// names are unique within each fleet's manager.
			WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				if err := r.client.Get(ctx, req.NamespacedName, u); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
				if !u.GetDeletionTimestamp().IsZero() {
					return reconcile.Result{}, nil
				}
				after, err := fn(ctx, u)
				return reconcile.Result{RequeueAfter: after}, err
			}))
		if err != nil {
			return fmt.Errorf("set up %s reconciler: %w", kind, err)
		}
	}
	return nil
}

type reconciler struct {
	client  client.Client
	members Members
}

// reconcileCluster marks the infrastructure provisioned: the member's
// apiserver already runs, its endpoint was written at creation.
func (r *reconciler) reconcileCluster(ctx context.Context, u *unstructured.Unstructured) (time.Duration, error) {
	return 0, r.patchStatus(ctx, u, map[string]any{
		"initialization": map[string]any{"provisioned": true},
		"conditions":     []any{condition("Ready", true, "Provisioned", "local fleet member")},
	})
}

// reconcileMachine marks a worker provisioned; its providerID names a kwok Node.
func (r *reconciler) reconcileMachine(ctx context.Context, u *unstructured.Unstructured) (time.Duration, error) {
	if id, _, _ := unstructured.NestedString(u.Object, "spec", "providerID"); id == "" {
		return 0, fmt.Errorf("%s %s has no spec.providerID", MachineKind, u.GetName())
	}
	return 0, r.patchStatus(ctx, u, map[string]any{
		"initialization": map[string]any{"provisioned": true},
		"conditions":     []any{condition("Ready", true, "Provisioned", "kwok node")},
	})
}

// reconcileControlPlane publishes the kubeconfig Secret and reports the
// control plane Available while the member's apiserver is ready.
func (r *reconciler) reconcileControlPlane(ctx context.Context, u *unstructured.Unstructured) (time.Duration, error) {
	clusterName := u.GetName()
	member, ok := r.members.Lookup(u.GetNamespace(), clusterName)
	if !ok {
		return 5 * time.Second, nil
	}
	if err := r.ensureKubeconfigSecret(ctx, u, member); err != nil {
		return 0, err
	}
	available, reason, message := true, "Available", "kube-apiserver is ready"
	probeCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := member.Healthy(probeCtx); err != nil {
		available, reason, message = false, "Unavailable", "kube-apiserver is not ready: "+err.Error()
	}
	ready := int64(0)
	if available {
		ready = 1
	}
	err := r.patchStatus(ctx, u, map[string]any{
		"initialization":    map[string]any{"controlPlaneInitialized": true},
		"version":           member.KubernetesVersion,
		"replicas":          int64(1),
		"readyReplicas":     ready,
		"availableReplicas": ready,
		"upToDateReplicas":  int64(1),
		"conditions":        []any{condition("Available", available, reason, message)},
	})
	return 5 * time.Second, err
}

func (r *reconciler) ensureKubeconfigSecret(ctx context.Context, owner *unstructured.Unstructured, member Member) error {
	name := owner.GetName() + "-kubeconfig"
	secret := &corev1.Secret{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, secret)
	if err == nil && bytes.Equal(secret.Data["value"], member.Kubeconfig) {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	desired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: owner.GetNamespace(),
			Name:      name,
			Labels:    map[string]string{"cluster.x-k8s.io/cluster-name": owner.GetName()},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
			}},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{"value": member.Kubeconfig},
	}
	if apierrors.IsNotFound(err) {
		return r.client.Create(ctx, desired)
	}
	secret.Data = desired.Data
	return r.client.Update(ctx, secret)
}

func (r *reconciler) patchStatus(ctx context.Context, u *unstructured.Unstructured, fields map[string]any) error {
	before := u.DeepCopy()
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	// Keep lastTransitionTime stable while a condition's status holds.
	oldConds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if conds, ok := fields["conditions"].([]any); ok {
		for i, c := range conds {
			conds[i] = keepTransitionTime(c.(map[string]any), oldConds)
		}
	}
	for k, v := range fields {
		status[k] = v
	}
	if err := unstructured.SetNestedMap(u.Object, status, "status"); err != nil {
		return err
	}
	return r.client.Status().Patch(ctx, u, client.MergeFrom(before))
}

func condition(conditionType string, ok bool, reason, message string) map[string]any {
	status := "False"
	if ok {
		status = "True"
	}
	return map[string]any{
		"type": conditionType, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}
}

func keepTransitionTime(c map[string]any, old []any) map[string]any {
	for _, o := range old {
		om, ok := o.(map[string]any)
		if ok && om["type"] == c["type"] && om["status"] == c["status"] {
			c["lastTransitionTime"] = om["lastTransitionTime"]
		}
	}
	return c
}
