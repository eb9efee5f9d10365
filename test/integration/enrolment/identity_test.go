package enrolment_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
)

var enrolled = map[string]string{clusterv1alpha1.EnrolLabel: "true"}

func envtestUser(name string) envtest.User {
	return envtest.User{Name: name, Groups: []string{"system:masters"}}
}

func memberClients() *memberclient.Cache {
	return memberclient.New(hub.Client, hub.Client, clientgoscheme.Scheme, nil)
}

func hubIdentity(t *testing.T, member string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: "flotilla-system", Name: member + "-hub-identity"}, s); err != nil {
		t.Fatalf("hub identity Secret of %s: %v", member, err)
	}
	return s
}

func TestDeletedMemberTokenIsReplaced(t *testing.T) {
	createCluster(t, "enrol-token", "token-loss", clusterOpts{labels: enrolled})
	waitEnrolled(t, "token-loss")
	before := hubIdentity(t, "token-loss")

	tok := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-hub-token"}}
	if err := memberAdmin.Delete(ctx(), tok); err != nil {
		t.Fatal(err)
	}
	cache := memberClients()
	eventually(t, "a new working identity", func() error {
		after := hubIdentity(t, "token-loss")
		if bytes.Equal(after.Data["value"], before.Data["value"]) {
			return fmt.Errorf("hub identity Secret unchanged")
		}
		m, err := cache.Get(ctx(), "token-loss")
		if err != nil {
			return err
		}
		return m.Client.List(ctx(), &corev1.NamespaceList{})
	})
	if err := memberAdmin.Get(ctx(), client.ObjectKeyFromObject(tok), &corev1.Secret{}); err != nil {
		t.Errorf("token Secret not re-created in the member: %v", err)
	}
}

func TestKubeconfigRotationIsFollowed(t *testing.T) {
	ns := "enrol-rotation"
	createCluster(t, ns, "rotating", clusterOpts{labels: enrolled})
	waitEnrolled(t, "rotating")

	// CAPI rotates the kubeconfig: another admin, and the member reached
	// by another address.
	user, err := memberEnv.AddUser(envtestUser("capi-admin-rotated"), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	var server string
	for _, c := range kc.Clusters {
		c.Server = strings.Replace(c.Server, "127.0.0.1", "localhost", 1)
		server = c.Server
	}
	rotated, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, ns, "rotating", rotated)

	cache := memberClients()
	eventually(t, "the hub identity to follow the rotated kubeconfig", func() error {
		m, err := cache.Get(ctx(), "rotating")
		if err != nil {
			return err
		}
		if m.Config.Host != server {
			return fmt.Errorf("identity reaches %s, want %s", m.Config.Host, server)
		}
		return m.Client.List(ctx(), &corev1.NamespaceList{})
	})
	waitEnrolled(t, "rotating")
}

func TestUnenrolRemovesMemberAndItsIdentityFromTheMember(t *testing.T) {
	ns := "enrol-unenrol"
	createCluster(t, ns, "quitter", clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}})
	waitEnrolled(t, "quitter")

	updateCluster(t, ns, "quitter", func(c *capiv1.Cluster) { delete(c.Labels, clusterv1alpha1.EnrolLabel) })
	eventually(t, "member quitter removed and its Cluster released", func() error {
		if err := memberGone("quitter"); err != nil {
			return err
		}
		c := getCluster(t, ns, "quitter")
		if len(c.Finalizers) > 0 || c.Labels[clusterv1alpha1.MemberLabel] != "" {
			return fmt.Errorf("Cluster still held: finalizers %v, labels %v", c.Finalizers, c.Labels)
		}
		return nil
	})
	if got := getCluster(t, ns, "quitter").Annotations[clusterv1alpha1.MemberNameAnnotation]; got != "quitter" {
		t.Errorf("name annotation = %q, want it kept so that re-enrolment keeps the name", got)
	}
	err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "flotilla-system", Name: "flotilla-hub"}, &corev1.ServiceAccount{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("hub ServiceAccount still in the member after unenrol (%v)", err)
	}
}
