package enrolment_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
	return memberclient.New(hub.Client, hub.Client, clientgoscheme.Scheme)
}

func hubIdentity(t *testing.T, member string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: "flotilla-system", Name: member + "-hub-identity"}, s); err != nil {
		t.Fatalf("hub identity Secret of %s: %v", member, err)
	}
	return s
}

func TestScopedIdentityPushesWorkloadsButCannotEscalate(t *testing.T) {
	createCluster(t, "enrol-identity", "scoped", clusterOpts{labels: enrolled})
	waitEnrolled(t, "scoped")

	cache := memberClients()
	m, err := cache.Get(ctx(), "scoped")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(hubIdentity(t, "scoped").Data["value"]), "client-certificate-data") {
		t.Fatal("the hub identity kubeconfig carries a client certificate: it must be the ServiceAccount token, not CAPI's admin credentials")
	}

	// What Works need: namespaces and workloads.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pushed"}}
	if err := m.Client.Create(ctx(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("scoped identity cannot create a namespace: %v", err)
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pushed", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	if err := m.Client.Create(ctx(), dep); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("scoped identity cannot create a Deployment: %v", err)
	}

	// What would escalate: binding cluster-admin, minting tokens, impersonating.
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub-escalates"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "flotilla-system", Name: "flotilla-hub"}},
	}
	if err := m.Client.Create(ctx(), crb); !apierrors.IsForbidden(err) {
		t.Errorf("binding cluster-admin: got %v, want Forbidden", err)
	}
	cs := kubernetes.NewForConfigOrDie(m.Config)
	_, err = cs.CoreV1().ServiceAccounts("flotilla-system").CreateToken(ctx(), "flotilla-hub", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("minting a ServiceAccount token: got %v, want Forbidden", err)
	}
	imp := rest.CopyConfig(m.Config)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "system:admin", Groups: []string{"system:masters"}}
	_, err = kubernetes.NewForConfigOrDie(imp).CoreV1().Namespaces().List(ctx(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("impersonating system:masters: got %v, want Forbidden", err)
	}

	// The cache hands out the same connection until the Secret changes.
	again, err := cache.Get(ctx(), "scoped")
	if err != nil || again != m {
		t.Errorf("second Get returned a new connection (%v)", err)
	}
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
