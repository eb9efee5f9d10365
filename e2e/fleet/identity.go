package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/clusterctl/release"
)

// The manager's identity on the hub, as `clusterctl init --addon flotilla`
// makes it: the ServiceAccount flotilla-manager in flotilla-system, bound to
// the released ClusterRole and leader-election Role, and confined by the
// released admission policies (whose user name they match).
const (
	managerNamespace      = release.Namespace
	managerServiceAccount = "flotilla-manager"
)

// ManagerUser is the user name flotilla-manager authenticates to the hub as.
func ManagerUser() string {
	return "system:serviceaccount:" + managerNamespace + ":" + managerServiceAccount
}

// identityKinds are the kinds of the release's components the local fleet
// installs: the manager's identity, its RBAC, the tenant roles and the
// admission policies. CRDs are installed apart; the Deployment, Service and
// cert-manager objects have no place on a fleet whose manager is a local
// process, and the webhooks are registered at its loopback port.
var identityKinds = map[string]bool{
	"Namespace": true, "ServiceAccount": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// installIdentity installs the release's RBAC and admission policies and
// writes a kubeconfig that authenticates as the manager's ServiceAccount,
// so that flotilla-manager runs on the local fleet with no more rights than
// an installation by clusterctl gives it.
func (h *Hub) installIdentity(ctx context.Context, opts Options) error {
	components, err := release.Components(release.Options{RepoRoot: opts.RepoRoot, Registry: "ghcr.io/flotilla-io", Tag: "dev"})
	if err != nil {
		return err
	}
	notSet := func(string) (string, error) { return "", errors.New("not set") }
	rendered, err := yamlprocessor.NewSimpleProcessor().Process(components, notSet)
	if err != nil {
		return fmt.Errorf("the release's components do not render with their defaults: %w", err)
	}
	objs, err := utilyaml.ToUnstructured(rendered)
	if err != nil {
		return err
	}
	// Namespaces first: the rest lives in them.
	var ordered []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ordered = append(ordered, o)
		}
	}
	for _, o := range objs {
		if identityKinds[o.GetKind()] && o.GetKind() != "Namespace" {
			ordered = append(ordered, o)
		}
	}
	for i := range ordered {
		o := &ordered[i]
		if err := h.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}

	sa := &corev1.ServiceAccount{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: managerServiceAccount}, sa); err != nil {
		return fmt.Errorf("the release's components hold no ServiceAccount %s/%s: %w", managerNamespace, managerServiceAccount, err)
	}
	// A year: `make dev` may be left running for days (the fleet's
	// apiservers set no maximum token lifetime).
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](365 * 24 * 3600)}}
	if err := h.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("token of %s: %w", ManagerUser(), err)
	}
	h.managerToken = tr.Status.Token
	h.managerKubeconfig = filepath.Join(h.cp.dir, "flotilla-manager.kubeconfig")
	if err := writeKubeconfig(h.managerKubeconfig, h.cp.name, h.cp.Server(), h.cp.caPEM, h.managerToken); err != nil {
		return err
	}
	return h.waitManagerAuthorized(ctx)
}

// waitManagerAuthorized waits until the hub answers the manager's identity
// as its RBAC says: an apiserver authorizes from informers of the RBAC
// objects, so bindings just created, or an apiserver just started, refuse
// for a moment what they will allow (kubernetes/kubernetes#121635).
func (h *Hub) waitManagerAuthorized(ctx context.Context) error {
	c, err := client.New(h.ManagerRESTConfig(), client.Options{Scheme: h.scheme})
	if err != nil {
		return err
	}
	return waitFor(ctx, "the hub to authorize "+ManagerUser(), time.Minute, func(ctx context.Context) error {
		return c.List(ctx, &workv1alpha1.ResourceBindingList{}, client.Limit(1))
	}, h.cp.apiserver)
}

// ManagerKubeconfig is the path of a kubeconfig of the hub that
// authenticates as flotilla-manager's ServiceAccount.
func (h *Hub) ManagerKubeconfig() string { return h.managerKubeconfig }

// ManagerRESTConfig is a client configuration of the hub that
// authenticates as flotilla-manager's ServiceAccount.
func (h *Hub) ManagerRESTConfig() *rest.Config {
	cfg := h.cp.RESTConfig()
	cfg.BearerToken = h.managerToken
	return cfg
}
