package agent_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// asAgent is a hub client with the credentials the agent has mounted.
func asAgent(t *testing.T, kubeconfig []byte) client.Client {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAgentCredentialsReachOnlyItsExecutionNamespaceAndItsMemberCluster(t *testing.T) {
	kubeconfig, err := os.ReadFile(credentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	c := asAgent(t, kubeconfig)
	others := createWork(t, other, "someone-elses", manifest(t, configMap("shop", "theirs", "x")))
	otherNS := clusterv1alpha1.ExecutionNamespace(other)
	ownNS := clusterv1alpha1.ExecutionNamespace(edge)

	own := &clusterv1alpha1.MemberCluster{}
	for what, err := range map[string]error{
		"list its Works":          c.List(ctx(), &workv1alpha1.WorkList{}, client.InNamespace(ownNS)),
		"read its MemberCluster":  c.Get(ctx(), client.ObjectKey{Name: edge}, own),
		"read its Lease":          c.Get(ctx(), client.ObjectKey{Namespace: ownNS, Name: clusterv1alpha1.AgentLeaseName}, &coordinationv1.Lease{}),
		"write its member status": c.Status().Patch(ctx(), own, client.MergeFrom(own.DeepCopy())),
	} {
		if err != nil {
			t.Errorf("agent credentials cannot %s: %v", what, err)
		}
	}

	theirs := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: other}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: clusterv1alpha1.AgentLeaseName}}
	for what, err := range map[string]error{
		"read a Work of another member":              c.Get(ctx(), client.ObjectKeyFromObject(others), &workv1alpha1.Work{}),
		"list another member's Works":                c.List(ctx(), &workv1alpha1.WorkList{}, client.InNamespace(otherNS)),
		"write another member's Work status":         c.Status().Patch(ctx(), others, client.RawPatch("application/merge-patch+json", []byte(`{"status":{}}`))),
		"renew a Lease for another member":           c.Create(ctx(), lease),
		"read another MemberCluster":                 c.Get(ctx(), client.ObjectKey{Name: other}, &clusterv1alpha1.MemberCluster{}),
		"list MemberClusters":                        c.List(ctx(), &clusterv1alpha1.MemberClusterList{}),
		"write another MemberCluster's status":       c.Status().Patch(ctx(), theirs, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"kubernetesVersion":"v9"}}`))),
		"read Secrets of its execution namespace":    c.List(ctx(), &corev1.SecretList{}, client.InNamespace(ownNS)),
		"create Works, as only the hub renders them": c.Create(ctx(), &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ownNS, Name: "forged"}}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("agent credentials %s: got %v, want Forbidden", what, err)
		}
	}
}

func TestAgentMayChangeOnlyItsWorksFinalizerAndStatusAndItsMemberClusterStatus(t *testing.T) {
	kubeconfig, err := os.ReadFile(credentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	c := asAgent(t, kubeconfig)
	w := createWork(t, edge, "attacked", manifest(t, configMap("shop", "attacked", "v1")))
	eventually(t, "the Work applied by the agent (finalizer added)", func() error {
		return conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied)
	})
	others := createWork(t, other, "not-edges", manifest(t, configMap("shop", "not-edges", "x")))

	merge := func(patch string) client.Patch { return client.RawPatch("application/merge-patch+json", []byte(patch)) }
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("agent credentials %s: got %v, want Forbidden or Invalid from the hub's apiserver", what, err)
			return
		}
		t.Logf("%s: %v", what, err)
	}
	own := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: edge}}
	refused("write its MemberCluster's spec (sync mode)", c.Patch(ctx(), own, merge(`{"spec":{"syncMode":"Push"}}`)))
	refused("remove its MemberCluster's taints", c.Patch(ctx(), own, merge(`{"spec":{"taints":[]}}`)))
	refused("relabel its MemberCluster", c.Patch(ctx(), own, merge(`{"metadata":{"labels":{"tier":"gold"}}}`)))
	refused("relabel its Work as another member's", c.Patch(ctx(), w, merge(`{"metadata":{"labels":{"flotilla.io/member":"`+other+`"}}}`)))
	refused("annotate its Work with another binding", c.Patch(ctx(), w, merge(`{"metadata":{"annotations":{"work.flotilla.io/binding-name":"forged"}}}`)))
	refused("rewrite its Work's manifests", c.Patch(ctx(), w, merge(`{"spec":{"workload":{"manifests":[]}}}`)))
	refused("suspend its Work", c.Patch(ctx(), w, merge(`{"spec":{"suspendDispatching":true}}`)))
	refused("add a finalizer of its own choosing", c.Patch(ctx(), w, client.RawPatch("application/json-patch+json",
		[]byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/hold"}]`))))
	refused("update another member's Work", c.Patch(ctx(), others, merge(`{"metadata":{"labels":{"x":"y"}}}`)))
	refused("write another member's Work status", c.Status().Patch(ctx(), others, merge(`{"status":{"conditions":[]}}`)))
	refused("renew another Lease in its namespace", c.Update(ctx(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace(edge), Name: "someone-else", ResourceVersion: "1"}}))

	// What it needs still works: its Work's status, and the execution
	// finalizer (removed and given back).
	if err := c.Status().Patch(ctx(), w, merge(`{"status":{"manifestStatuses":null}}`)); err != nil {
		t.Errorf("agent credentials cannot write its Work's status: %v", err)
	}
	got := &workv1alpha1.Work{}
	if err := c.Get(ctx(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	before := got.DeepCopy()
	got.Finalizers = nil
	if err := c.Patch(ctx(), got, client.MergeFrom(before)); err != nil {
		t.Errorf("agent credentials cannot remove the execution finalizer: %v", err)
	}
}

func TestRotatedHubCredentialsArePickedUpWithoutARestart(t *testing.T) {
	old, err := os.ReadFile(credentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	// Revoke the agent's hub token: enrolment issues a new one and puts it
	// into the add-on Secret, which the ClusterResourceSet carries into the
	// member and the kubelet into the mounted file.
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ExecutionNamespace(edge), Name: "flotilla-agent-token"}}
	if err := hub.Client.Delete(ctx(), token); err != nil {
		t.Fatal(err)
	}
	var rotated []byte
	eventually(t, "new hub credentials issued by enrolment", func() error {
		kubeconfig, err := issuedHubCredentials(ctx())
		if err != nil {
			return err
		}
		if bytes.Equal(kubeconfig, old) {
			return fmt.Errorf("still the old kubeconfig")
		}
		rotated = kubeconfig
		return nil
	})
	eventually(t, "the old token rejected", func() error {
		err := asAgent(t, old).Get(ctx(), client.ObjectKey{Name: edge}, &clusterv1alpha1.MemberCluster{})
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("old token: %v, want Unauthorized", err)
		}
		return nil
	})

	if err := writeCredentials(rotated); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	key := client.ObjectKey{Namespace: clusterv1alpha1.AgentLeaseNamespace(edge), Name: clusterv1alpha1.AgentLeaseName}
	eventually(t, "the Lease renewed with the new credentials", func() error {
		l := &coordinationv1.Lease{}
		if err := hub.Client.Get(ctx(), key, l); err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(written.Add(leaseRenewal)) {
			return fmt.Errorf("last renewed %s", l.Spec.RenewTime)
		}
		return nil
	})
	w := createWork(t, edge, "after-rotation", manifest(t, configMap("shop", "after-rotation", "v1")))
	eventually(t, "a new Work applied and reported with the new credentials", func() error {
		if err := valueIs("shop", "after-rotation", "v1")(); err != nil {
			return err
		}
		return conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied)
	})
}
