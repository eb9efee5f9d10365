package enrolment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/secret"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// How the hub identity's rights grow. Enrolment gives the identity no write
// anywhere (rbac.go). Before the execution controller applies a Work, it
// asks Access for what the Work's objects need; Access grants what is
// missing with CAPI's admin kubeconfig — the credentials enrolment sets the
// identity up with; the identity never grants itself:
//
//   - a namespace N: N is created if missing (labelled as Flotilla's),
//     labelled flotilla.io/managed-namespace=true, and gets the RoleBinding
//     flotilla-hub to ClusterRole flotilla-hub-namespaced;
//   - a cluster-scoped kind, or an RBAC or admission kind: added to
//     ClusterRole flotilla-hub-granted and to the kinds the admission policy
//     lets through — only for a Work of a ClusterResourceBinding (a cluster
//     admin's ClusterPropagationPolicy); a ResourceBinding's Work never
//     widens the identity beyond its namespaces.
//
// kube-system, kube-public, kube-node-lease and flotilla-system are never
// granted. The rule is applier.Allowed, which also decides the agent's
// grants in a Pull-mode member (agentrights.go). Grants are not taken back while the member stays enrolled (a
// workload's namespace is kept when it leaves); unenrolling removes them.

// accessTTL bounds how long a grant is taken as still in place without
// looking (a member admin may remove a RoleBinding).
const accessTTL = 10 * time.Minute

// Access grants the hub identity in Push-mode members what Works need.
type Access struct {
	// Reader reads MemberClusters and CAPI's kubeconfig Secrets on the hub
	// (the manager's API reader: Secrets are not cached).
	Reader client.Reader

	mu      sync.Mutex
	granted map[string]*grants
	// writing serialises the grants of each member: two Works of a new
	// namespace would both create its RoleBinding (the second refused as
	// already existing), and two grants of cluster-scoped kinds both read
	// and write the one granted ClusterRole, the second over the first.
	writing map[string]*sync.Mutex
}

// grants are what a member's identity is known to hold.
type grants struct {
	// guarded: the identity's admission policy was seen in force.
	guarded    bool
	namespaces map[string]time.Time
	resources  map[schema.GroupResource]time.Time
}

var _ applier.Access = &Access{}

// Grant makes sure the hub identity in member holds what need says, before
// w is applied.
func (a *Access) Grant(ctx context.Context, member string, w *workv1alpha1.Work, need applier.Need) error {
	allowed, err := applier.Allowed(w, need)
	if err != nil {
		return err
	}
	if namespaces, resources := a.missing(member, allowed); len(namespaces) == 0 && len(resources) == 0 {
		return nil
	}
	unlock := a.lockMember(member)
	defer unlock()
	// Again: another Work of the member may have been granted it meanwhile.
	namespaces, resources := a.missing(member, allowed)
	if len(namespaces) == 0 && len(resources) == 0 {
		return nil
	}
	admin, err := a.adminOf(ctx, member)
	if err != nil {
		return err
	}
	c := admin.client
	for _, ns := range namespaces {
		if err := ensureManagedNamespace(ctx, c, ns); err != nil {
			return fmt.Errorf("namespace %s of member %s: %w", ns, member, err)
		}
		if !a.guarded(member) {
			// Never a write right before the policy that keeps the
			// identity from minting tokens is in force.
			if err := guardInForce(ctx, admin.config, hubMember, ns); err != nil {
				return fmt.Errorf("member %s: %w", member, err)
			}
			a.markGuarded(member)
		}
		if err := writeObject(ctx, c, hubMember.namespaceBinding(ns)); err != nil {
			return fmt.Errorf("grant the hub identity namespace %s of member %s: %w", ns, member, err)
		}
		a.record(member, ns, schema.GroupResource{})
	}
	if len(resources) > 0 {
		if err := grantResources(ctx, c, hubMember, resources); err != nil {
			return fmt.Errorf("grant the hub identity %v in member %s: %w", resources, member, err)
		}
		for _, r := range resources {
			a.record(member, "", r)
		}
	}
	return nil
}

// missing is what of allowed member's identity is not known to hold.
func (a *Access) missing(member string, allowed applier.Grant) (namespaces []string, resources []schema.GroupResource) {
	for _, ns := range allowed.Namespaces {
		if !a.holds(member, ns, schema.GroupResource{}) {
			namespaces = append(namespaces, ns)
		}
	}
	for _, r := range allowed.Resources {
		if !a.holds(member, "", r) {
			resources = append(resources, r)
		}
	}
	return namespaces, resources
}

// lockMember takes member's grant lock and returns its release.
func (a *Access) lockMember(member string) func() {
	a.mu.Lock()
	if a.writing == nil {
		a.writing = map[string]*sync.Mutex{}
	}
	l := a.writing[member]
	if l == nil {
		l = &sync.Mutex{}
		a.writing[member] = l
	}
	a.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Forget drops what is known of member's grants (identity re-created,
// member removed).
func (a *Access) Forget(member string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.granted, member)
}

func (a *Access) holds(member, ns string, r schema.GroupResource) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.granted[member]
	if g == nil {
		return false
	}
	at, ok := g.resources[r]
	if ns != "" {
		at, ok = g.namespaces[ns]
	}
	return ok && time.Since(at) < accessTTL
}

func (a *Access) guarded(member string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.grantsOf(member).guarded
}

func (a *Access) markGuarded(member string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grantsOf(member).guarded = true
}

// grantsOf is member's entry; a.mu is held.
func (a *Access) grantsOf(member string) *grants {
	if a.granted == nil {
		a.granted = map[string]*grants{}
	}
	g := a.granted[member]
	if g == nil {
		g = &grants{namespaces: map[string]time.Time{}, resources: map[schema.GroupResource]time.Time{}}
		a.granted[member] = g
	}
	return g
}

func (a *Access) record(member, ns string, r schema.GroupResource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.grantsOf(member)
	if ns != "" {
		g.namespaces[ns] = time.Now()
	} else {
		g.resources[r] = time.Now()
	}
}

// adminOf connects to member with its Cluster's CAPI kubeconfig.
func (a *Access) adminOf(ctx context.Context, member string) (*admin, error) {
	m := &clusterv1alpha1.MemberCluster{}
	if err := a.Reader.Get(ctx, client.ObjectKey{Name: member}, m); err != nil {
		return nil, fmt.Errorf("read MemberCluster %s: %w", member, err)
	}
	ref := m.Spec.ClusterRef
	kubeconfig, err := secret.Get(ctx, a.Reader, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig Secret of Cluster %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	admin, _, err := adminClient(kubeconfig)
	return admin, err
}

// ensureManagedNamespace creates ns (as Flotilla's) or labels it managed.
func ensureManagedNamespace(ctx context.Context, c client.Client, ns string) error {
	n := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: ns}, n)
	switch {
	case apierrors.IsNotFound(err):
		n = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			ManagedNamespaceLabel: "true", workv1alpha1.ManagedByLabel: workv1alpha1.ManagedByValue}}}
		if err := c.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	case err != nil:
		return err
	case n.Labels[ManagedNamespaceLabel] != "true":
		before := n.DeepCopy()
		setLabel(n, ManagedNamespaceLabel, "true")
		if err := c.Patch(ctx, n, client.MergeFrom(before)); err != nil {
			return err
		}
	}
	return nil
}

// grantResources adds resources to the identity's granted role and to what
// its admission policy lets through.
func grantResources(ctx context.Context, c client.Client, id memberIdentity, resources []schema.GroupResource) error {
	current := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: id.name + grantedSuffix}, current); client.IgnoreNotFound(err) != nil {
		return err
	}
	all := unionResources(grantedResources(current.Rules), resources)
	if err := writeObject(ctx, c, id.grantedRole(all)); err != nil {
		return err
	}
	return applyGuard(ctx, c, id, all)
}

// unionResources is a with the resources of b it lacks.
func unionResources(a, b []schema.GroupResource) []schema.GroupResource {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// guardInForce asks the member, by a dry run made as the identity (impersonated
// with CAPI's admin credentials, in group system:masters so that RBAC lets
// the request through to admission), to create a service-account-token
// Secret in ns: the identity's admission policy must refuse it.
func guardInForce(ctx context.Context, adminConfig *rest.Config, id memberIdentity, ns string) error {
	policy := id.name
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.username(), Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	probe := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "flotilla-guard-probe-", Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	err = c.Create(ctx, probe, client.DryRunAll)
	switch {
	case err == nil:
		return fmt.Errorf("the admission policy %s is not in force yet (a dry-run token Secret was admitted)", policy)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'"):
		return nil
	default:
		return fmt.Errorf("check that the admission policy %s is in force: %w", policy, err)
	}
}
