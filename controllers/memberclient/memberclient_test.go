package memberclient

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func identitySecret(t *testing.T, server, token string) *corev1.Secret {
	t.Helper()
	kc, err := Kubeconfig("m1", &clientcmdapi.Cluster{Server: server}, token)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "m1-hub-identity"}, Data: map[string][]byte{KubeconfigKey: kc}}
}

func TestGetCachesPerMemberUntilTheIdentitySecretChanges(t *testing.T) {
	ctx := context.Background()
	s := identitySecret(t, "https://m1.example:6443", "token-1")
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(s).Build()
	cache := New(c, c, clientgoscheme.Scheme, NewHealth())

	first, err := cache.Get(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if first.Config.Host != "https://m1.example:6443" || first.Config.BearerToken != "token-1" {
		t.Errorf("config host %q token %q, want the identity's", first.Config.Host, first.Config.BearerToken)
	}
	if again, _ := cache.Get(ctx, "m1"); again != first {
		t.Error("unchanged Secret: want the cached connection")
	}

	rotated := identitySecret(t, "https://m1.example:6443", "token-2")
	s.Data = rotated.Data
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	second, err := cache.Get(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if second == first || second.Config.BearerToken != "token-2" {
		t.Errorf("changed Secret: want a new connection with token-2, got token %q (same=%v)", second.Config.BearerToken, second == first)
	}
}

func TestGetWithoutIdentityIsErrNoIdentity(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	_, err := New(c, c, clientgoscheme.Scheme, nil).Get(context.Background(), "pull-member")
	if !errors.Is(err, ErrNoIdentity) {
		t.Errorf("got %v, want ErrNoIdentity", err)
	}
}
