// Package memberclient gives hub controllers clients to Push-mode members
// that act as the hub's scoped identity (ServiceAccount flotilla-hub in the
// member), never as CAPI's admin kubeconfig. Enrolment writes the identity's
// kubeconfig to the hub Secret flotilla-system/<member>-hub-identity; this
// package is the one place that reads that format.
//
// Clients are cached per member and rebuilt when the Secret's resourceVersion
// changes (identity re-created, CAPI kubeconfig rotated), which is checked
// against the manager's metadata cache, so a Get costs no API call.
package memberclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// KubeconfigKey is the key of the kubeconfig in an identity Secret; the same
// key as CAPI's <cluster>-kubeconfig Secrets.
const KubeconfigKey = "value"

// ErrNoIdentity means the member has no identity Secret yet: it is not
// enrolled, or is in Pull mode.
var ErrNoIdentity = errors.New("member has no hub identity")

// Member is a connection to one member as the hub's scoped identity.
type Member struct {
	// Client reads and writes the member's objects.
	Client client.Client
	// Config is the REST configuration behind Client, for typed clientsets,
	// discovery or dynamic clients.
	Config *rest.Config
}

// Cache hands out Members, one cached connection per member.
type Cache struct {
	// QPS and Burst bound each member connection's requests (client-go's
	// client-side rate limit); 0 keeps client-go's defaults (5 and 10).
	QPS   float32
	Burst int

	metadata  client.Reader
	secrets   client.Reader
	scheme    *runtime.Scheme
	namespace string
	health    *Health

	mu      sync.Mutex
	entries map[string]entry
}

type entry struct {
	resourceVersion string
	member          *Member
}

// New returns a Cache. metadata must serve PartialObjectMetadata of Secrets
// (a manager's client does, from its metadata cache); secrets reads whole
// Secrets (e.g. the manager's API reader, so that the hub never caches every
// Secret it has). scheme is the members' client scheme.
// health, when not nil, observes every request made through the Cache's
// connections (see Health).
func New(metadata, secrets client.Reader, scheme *runtime.Scheme, health *Health) *Cache {
	return &Cache{metadata: metadata, secrets: secrets, scheme: scheme, namespace: clusterv1alpha1.SystemNamespace, health: health, entries: map[string]entry{}}
}

// Get returns a connection to member as its scoped identity.
func (c *Cache) Get(ctx context.Context, member string) (*Member, error) {
	key := client.ObjectKey{Namespace: c.namespace, Name: clusterv1alpha1.HubIdentitySecretName(member)}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := c.metadata.Get(ctx, key, meta); err != nil {
		if apierrors.IsNotFound(err) {
			c.Invalidate(member)
			return nil, fmt.Errorf("member %s: %w", member, ErrNoIdentity)
		}
		return nil, fmt.Errorf("look up hub identity Secret %s of member %s: %w", key, member, err)
	}
	c.mu.Lock()
	e, ok := c.entries[member]
	c.mu.Unlock()
	if ok && e.resourceVersion == meta.ResourceVersion {
		return e.member, nil
	}

	secret := &corev1.Secret{}
	if err := c.secrets.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("member %s: %w", member, ErrNoIdentity)
		}
		return nil, fmt.Errorf("read hub identity Secret %s of member %s: %w", key, member, err)
	}
	cfg, err := RESTConfig(secret)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", member, err)
	}
	if c.QPS > 0 {
		cfg.QPS, cfg.Burst = c.QPS, c.Burst
	}
	if c.health != nil {
		cfg.WrapTransport = c.health.Wrap(member)
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.scheme})
	if err != nil {
		return nil, fmt.Errorf("client for member %s: %w", member, err)
	}
	m := &Member{Client: cl, Config: cfg}
	c.mu.Lock()
	c.entries[member] = entry{resourceVersion: secret.ResourceVersion, member: m}
	c.mu.Unlock()
	return m, nil
}

// Invalidate drops the cached connection to member, e.g. after the member
// answered 401 and before its identity is re-created.
func (c *Cache) Invalidate(member string) {
	c.mu.Lock()
	delete(c.entries, member)
	c.mu.Unlock()
}

// RESTConfig reads the kubeconfig of an identity Secret.
func RESTConfig(secret *corev1.Secret) (*rest.Config, error) {
	data, ok := secret.Data[KubeconfigKey]
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no %q key", secret.Namespace, secret.Name, KubeconfigKey)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("parse kubeconfig of Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	cfg.UserAgent = "flotilla-manager"
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// Kubeconfig builds a kubeconfig that reaches cluster as the ServiceAccount
// whose token is given. cluster is taken whole from the kubeconfig the hub
// already reaches the member with (server, CA, TLS server name, proxy).
func Kubeconfig(name string, cluster *clientcmdapi.Cluster, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = cluster.DeepCopy()
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("write kubeconfig for %s: %w", name, err)
	}
	return out, nil
}
