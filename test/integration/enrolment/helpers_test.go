package enrolment_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const waitTimeout = 20 * time.Second

// eventually retries f until it returns nil or the timeout passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	eventuallyWithin(t, waitTimeout, what, f)
}

func eventuallyWithin(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consistently checks that f keeps returning nil for the duration.
func consistently(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ctx() context.Context { return context.Background() }

func ensureNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := hub.Client.Create(ctx(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// clusterOpts shape a test Cluster.
type clusterOpts struct {
	labels, annotations map[string]string
	failureDomains      []string
	paused              bool
	// notInitialized leaves status.initialization.controlPlaneInitialized unset.
	notInitialized bool
}

// newCluster builds a complete v1beta2 Cluster: no CAPI webhook runs here to
// default anything.
func newCluster(ns, name string, o clusterOpts) *capiv1.Cluster {
	c := &capiv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: o.labels, Annotations: o.annotations},
		Spec: capiv1.ClusterSpec{
			ControlPlaneEndpoint: capiv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
			ControlPlaneRef:      capiv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: name},
			InfrastructureRef:    capiv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: name},
		},
	}
	if o.paused {
		c.Spec.Paused = ptrTo(true)
	}
	return c
}

// createCluster creates a Cluster as Cluster API would leave it once its
// control plane is up: the kubeconfig Secret pointing at the member
// apiserver, then the status (control plane initialized, probe and control
// plane conditions True, failure domains). It returns when the status was
// written.
func createCluster(t *testing.T, ns, name string, o clusterOpts) *capiv1.Cluster {
	t.Helper()
	ensureNamespace(t, ns, nil)
	writeKubeconfig(t, ns, name, memberKubeconfig)
	c := newCluster(ns, name, o)
	if err := hub.Client.Create(ctx(), c); err != nil {
		t.Fatalf("create Cluster %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { deleteCluster(t, ns, name) })
	if o.notInitialized {
		return c
	}
	initializeControlPlane(t, c, o.failureDomains)
	return c
}

// initializeControlPlane writes the status Cluster API writes once the
// control plane answers.
func initializeControlPlane(t *testing.T, c *capiv1.Cluster, failureDomains []string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		now := metav1.Now()
		c.Status.Initialization = capiv1.ClusterInitializationStatus{InfrastructureProvisioned: ptrTo(true), ControlPlaneInitialized: ptrTo(true)}
		c.Status.Conditions = []metav1.Condition{
			{Type: capiv1.ClusterRemoteConnectionProbeCondition, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", LastTransitionTime: now},
			{Type: capiv1.ClusterControlPlaneAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: now},
		}
		c.Status.FailureDomains = nil
		for _, fd := range failureDomains {
			c.Status.FailureDomains = append(c.Status.FailureDomains, capiv1.FailureDomain{Name: fd, ControlPlane: ptrTo(true)})
		}
		return hub.Client.Status().Update(ctx(), c)
	})
	if err != nil {
		t.Fatalf("write status of Cluster %s/%s: %v", c.Namespace, c.Name, err)
	}
}

// updateCluster changes a Cluster, retrying on conflicts with enrolment's writes.
func updateCluster(t *testing.T, ns, name string, change func(*capiv1.Cluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := getCluster(t, ns, name)
		change(c)
		return hub.Client.Update(ctx(), c)
	})
	if err != nil {
		t.Fatalf("update Cluster %s/%s: %v", ns, name, err)
	}
}

func writeKubeconfig(t *testing.T, ns, cluster string, kubeconfig []byte) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kubeconfig", Labels: map[string]string{capiv1.ClusterNameLabel: cluster}},
		Type:       capiv1.ClusterSecretType,
		Data:       map[string][]byte{"value": kubeconfig},
	}
	err := hub.Client.Create(ctx(), s)
	if apierrors.IsAlreadyExists(err) {
		err = hub.Client.Update(ctx(), s)
	}
	if err != nil {
		t.Fatalf("write kubeconfig Secret of %s/%s: %v", ns, cluster, err)
	}
}

// deleteCluster deletes a Cluster and waits until enrolment has let it go.
func deleteCluster(t *testing.T, ns, name string) {
	t.Helper()
	c := &capiv1.Cluster{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return
	}
	if c.Spec.Paused != nil && *c.Spec.Paused {
		updateCluster(t, ns, name, func(c *capiv1.Cluster) { c.Spec.Paused = ptrTo(false) })
	}
	_ = hub.Client.Delete(ctx(), c)
	eventuallyWithin(t, drainTimeout+waitTimeout, fmt.Sprintf("Cluster %s/%s to be gone", ns, name), func() error {
		err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, &capiv1.Cluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

func getCluster(t *testing.T, ns, name string) *capiv1.Cluster {
	t.Helper()
	c := &capiv1.Cluster{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatalf("get Cluster %s/%s: %v", ns, name, err)
	}
	return c
}

// waitEnrolled waits for the member's Enrolled condition to be True and,
// in Push mode, for the status written with it (heartbeat, identity): the
// patch helper writes conditions, spec and status in separate requests.
func waitEnrolled(t *testing.T, member string) *clusterv1alpha1.MemberCluster {
	t.Helper()
	m := &clusterv1alpha1.MemberCluster{}
	eventually(t, "member "+member+" Enrolled", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: member}, m); err != nil {
			return err
		}
		c := meta(m.Status.Conditions, clusterv1alpha1.ConditionEnrolled)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Enrolled = %+v", c)
		}
		if m.Spec.SyncMode == clusterv1alpha1.Push && m.Status.LastHeartbeatTime == nil {
			return fmt.Errorf("no heartbeat yet")
		}
		return nil
	})
	return m
}

func meta(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func memberExists(name string) (bool, error) {
	err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, &clusterv1alpha1.MemberCluster{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// hashedName is the documented unique name: <name>-<first 8 hex digits of
// sha256("<namespace>/<name>")>.
func hashedName(ns, name string) string {
	sum := sha256.Sum256([]byte(ns + "/" + name))
	return name + "-" + hex.EncodeToString(sum[:])[:8]
}

// eventReasons lists the reasons of the events recorded about a Cluster.
func eventReasons(t *testing.T, c *capiv1.Cluster) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := hub.Client.List(ctx(), list, client.InNamespace(c.Namespace)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Cluster" && e.Regarding.Name == c.Name {
			out = append(out, e.Reason)
		}
	}
	return out
}
