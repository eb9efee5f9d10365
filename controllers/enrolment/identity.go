package enrolment

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sigs.k8s.io/cluster-api/util/secret"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
)

const (
	// hubIdentity names the ServiceAccount, ClusterRole and ClusterRoleBinding
	// of the hub's identity in a member's flotilla-system.
	hubIdentity = "flotilla-hub"
	// hubTokenSecret is the identity's long-lived token Secret in the member.
	hubTokenSecret = "flotilla-hub-token"

	// Annotations of the hub identity Secret: the CAPI kubeconfig Secret's
	// resourceVersion it was made with (rotation), and the hash of the rules
	// granted (the member's API changed).
	annotationSourceKubeconfig = "flotilla.io/source-kubeconfig-version"
	annotationRulesHash        = "flotilla.io/rbac-hash"

	memberTimeout = 15 * time.Second
	// tokenPoll: a token controller fills a token Secret within milliseconds,
	// and it cannot be watched in the member.
	tokenPoll = 250 * time.Millisecond
)

// managedBy labels every object enrolment writes, on the hub and in members.
func managedBy() map[string]string {
	return map[string]string{"app.kubernetes.io/managed-by": "flotilla-manager", "app.kubernetes.io/part-of": "flotilla"}
}

// observation is what one look at the member through the scoped identity saw.
type observation struct {
	version   string
	resources []*metav1.APIResourceList
	// partial: some API groups failed discovery (an aggregated API down); the
	// rules are then not compared, or a flapping API would churn RBAC.
	partial  bool
	capacity *corev1.ConfigMap
}

// errIdentityRejected: the member refused the identity (token deleted,
// ServiceAccount or RBAC gone), as opposed to not answering.
var errIdentityRejected = errors.New("member rejected the hub identity")

// reconcileIdentity makes sure the hub reaches a Push-mode member as its
// scoped identity: reuse the stored identity while the member accepts it and
// nothing it was made from changed; otherwise (re)create it with CAPI's admin
// kubeconfig — the only use of that kubeconfig.
func (r *Reconciler) reconcileIdentity(ctx context.Context, s *scope) (bool, error) {
	key := client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: clusterv1alpha1.HubIdentitySecretName(s.memberName)}
	if syncMode(s.member) != clusterv1alpha1.Push {
		// Pull mode: the hub does not write into the member, so it keeps no
		// identity there (one left from Push mode is dropped on the hub).
		if s.member.Status.IdentitySecretRef != nil {
			if err := r.deleteAll(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
				return false, err
			}
			s.member.Status.IdentitySecretRef = nil
		}
		return true, nil
	}
	log := ctrl.LoggerFrom(ctx)
	stored := &corev1.Secret{}
	err := r.APIReader.Get(ctx, key, stored)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read hub identity Secret %s: %w", key, err)
	}
	if err == nil && stored.Annotations[annotationSourceKubeconfig] == s.kubeconfig.ResourceVersion {
		cfg, cfgErr := memberclient.RESTConfig(stored)
		if cfgErr == nil {
			obs, probeErr := observe(ctx, cfg)
			switch {
			case probeErr == nil && (obs.partial || rulesHash(namespacedRules(obs.resources)) == stored.Annotations[annotationRulesHash]):
				s.identity, s.observed = cfg, obs
				s.member.Status.IdentitySecretRef = &corev1.SecretReference{Namespace: key.Namespace, Name: key.Name}
				return true, nil
			case probeErr != nil && !errors.Is(probeErr, errIdentityRejected):
				// Not answering is Cluster API's RemoteConnectionProbe to
				// report (mirrored as Reachable); try again next period.
				log.V(1).Info("Member did not answer the hub identity", "member", s.memberName, "error", probeErr.Error())
				return false, nil
			case probeErr != nil:
				log.Info("Member rejected the hub identity, re-creating it", "member", s.memberName, "error", probeErr.Error())
			default:
				log.Info("Member's API changed, updating the hub identity's rules", "member", s.memberName)
			}
		}
	}

	cfg, waiting, err := r.ensureIdentity(ctx, s, key)
	if err != nil {
		s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.IdentityFailedReason, "%s", err.Error())
		r.Recorder.Eventf(s.cluster, s.member, corev1.EventTypeWarning, clusterv1alpha1.IdentityFailedReason, "SetUpIdentity",
			"Setting up the hub identity in member %s failed: %s", s.memberName, err.Error())
		return false, err
	}
	if waiting {
		s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.WaitingForTokenReason,
			"waiting for the member to fill in the token of Secret %s/%s", clusterv1alpha1.SystemNamespace, hubTokenSecret)
		s.requeue(tokenPoll)
		return false, nil
	}
	obs, err := observe(ctx, cfg)
	if err != nil {
		err = fmt.Errorf("use the new hub identity of member %s: %w", s.memberName, err)
		s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.IdentityFailedReason, "%s", err.Error())
		return false, err
	}
	s.identity, s.observed = cfg, obs
	s.member.Status.IdentitySecretRef = &corev1.SecretReference{Namespace: key.Namespace, Name: key.Name}
	return true, nil
}

// ensureIdentity creates or repairs the identity in the member with CAPI's
// admin kubeconfig and stores its kubeconfig on the hub. It reports waiting
// while the member's token controller has not filled in the token yet.
func (r *Reconciler) ensureIdentity(ctx context.Context, s *scope, key client.ObjectKey) (*rest.Config, bool, error) {
	admin, cluster, err := adminClient(s.kubeconfig)
	if err != nil {
		return nil, false, err
	}
	_, lists, err := admin.discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, false, fmt.Errorf("discover the API of member %s: %w", s.memberName, err)
	}
	rules := namespacedRules(lists)
	token, err := applyIdentity(ctx, admin.client, lists)
	if err != nil {
		return nil, false, fmt.Errorf("set up ServiceAccount %s/%s in member %s: %w", clusterv1alpha1.SystemNamespace, hubIdentity, s.memberName, err)
	}
	if token == "" {
		return nil, true, nil
	}
	kubeconfig, err := memberclient.Kubeconfig(s.memberName, cluster, token)
	if err != nil {
		return nil, false, err
	}
	if err := r.ensureHubNamespace(ctx); err != nil {
		return nil, false, err
	}
	stored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err = controllerutil.CreateOrUpdate(ctx, r.uncached(), stored, func() error {
		setLabel(stored, clusterv1alpha1.MemberLabel, s.memberName)
		setAnnotation(stored, annotationSourceKubeconfig, s.kubeconfig.ResourceVersion)
		setAnnotation(stored, annotationRulesHash, rulesHash(rules))
		stored.Type = corev1.SecretTypeOpaque
		stored.Data = map[string][]byte{memberclient.KubeconfigKey: kubeconfig}
		return controllerutil.SetOwnerReference(s.member, stored, r.Client.Scheme())
	})
	if err != nil {
		return nil, false, fmt.Errorf("store hub identity Secret %s: %w", key, err)
	}
	cfg, err := memberclient.RESTConfig(stored)
	return cfg, false, err
}

// ensureHubNamespace creates flotilla-system on the hub if it is absent
// (the manager may run elsewhere, e.g. out of cluster in development).
func (r *Reconciler) ensureHubNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.SystemNamespace}}
	if err := r.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", clusterv1alpha1.SystemNamespace, err)
	}
	return nil
}

// applyIdentity writes the identity's objects into the member and returns
// its token, "" while the member's token controller has not filled it in.
// The namespaces and kinds granted to it on demand (access.go) are kept.
func applyIdentity(ctx context.Context, c client.Client, lists []*metav1.APIResourceList) (string, error) {
	if err := servesAdmissionPolicies(lists); err != nil {
		return "", err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.SystemNamespace, Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla"}}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.SystemNamespace, Name: hubIdentity}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, sa, func() error { sa.Labels = managedBy(); return nil }); err != nil {
		return "", err
	}
	granted, err := applyRoles(ctx, c, hubMember, namespacedRules(lists))
	if err != nil {
		return "", err
	}
	if err := applyGuard(ctx, c, hubMember, granted); err != nil {
		return "", err
	}
	token, err := ensureTokenSecret(ctx, c, sa, hubTokenSecret)
	if token == nil || err != nil {
		return "", err
	}
	return string(token.Data[corev1.ServiceAccountTokenKey]), nil
}

func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// applyRoles writes the identity's roles and bindings (see rbac.go) and
// returns the kinds granted to it so far. The granted role is created empty
// and otherwise left as it is: grants only grow.
func applyRoles(ctx context.Context, c client.Client, id memberIdentity, namespaced []rbacv1.PolicyRule) ([]schema.GroupResource, error) {
	for _, o := range id.roles(namespaced) {
		if err := writeObject(ctx, c, o); err != nil {
			return nil, err
		}
	}
	granted := &rbacv1.ClusterRole{}
	err := c.Get(ctx, client.ObjectKey{Name: id.name + grantedSuffix}, granted)
	if apierrors.IsNotFound(err) {
		granted = id.grantedRole(nil)
		err = c.Create(ctx, granted)
	}
	if err != nil {
		return nil, err
	}
	return grantedResources(granted.Rules), nil
}

// applyGuard writes the admission policy that confines the identity,
// allowing the sensitive kinds granted.
func applyGuard(ctx context.Context, c client.Client, id memberIdentity, granted []schema.GroupResource) error {
	for _, o := range id.guard(granted) {
		if err := writeObject(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// writeObject creates want in the member or brings the existing object's
// labels and content (rules, subjects, spec) in line with it.
// Another writer between the read and the write (a member admin, the
// agent's rights) makes it read and write again.
func writeObject(ctx context.Context, c client.Client, want client.Object) error {
	raced := func(err error) bool { return apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) }
	err := retry.OnError(retry.DefaultRetry, raced, func() error { return createOrUpdate(ctx, c, want) })
	if err != nil {
		return fmt.Errorf("write %T %s: %w", want, client.ObjectKeyFromObject(want), err)
	}
	return nil
}

func createOrUpdate(ctx context.Context, c client.Client, want client.Object) error {
	got := want.DeepCopyObject().(client.Object)
	_, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
		got.SetLabels(want.GetLabels())
		switch g := got.(type) {
		case *rbacv1.ClusterRole:
			g.Rules = want.(*rbacv1.ClusterRole).Rules
		case *rbacv1.Role:
			g.Rules = want.(*rbacv1.Role).Rules
		case *rbacv1.ClusterRoleBinding:
			g.Subjects, g.RoleRef = want.(*rbacv1.ClusterRoleBinding).Subjects, want.(*rbacv1.ClusterRoleBinding).RoleRef
		case *rbacv1.RoleBinding:
			g.Subjects, g.RoleRef = want.(*rbacv1.RoleBinding).Subjects, want.(*rbacv1.RoleBinding).RoleRef
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			g.Spec = want.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			g.Spec = want.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec
		default:
			return fmt.Errorf("no way to write %T", got)
		}
		return nil
	})
	return err
}

// ensureTokenSecret keeps a kubernetes.io/service-account-token Secret for sa
// and returns it once its token is filled in, nil before. A Secret left from
// an earlier ServiceAccount of the same name carries a dead token: it is
// replaced.
func ensureTokenSecret(ctx context.Context, c client.Client, sa *corev1.ServiceAccount, name string) (*corev1.Secret, error) {
	tokenSecret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: sa.Namespace, Name: name}, tokenSecret)
	switch {
	case err == nil && tokenSecret.Annotations[corev1.ServiceAccountUIDKey] != "" && tokenSecret.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID):
		if err := c.Delete(ctx, tokenSecret); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, nil
	case err == nil && len(tokenSecret.Data[corev1.ServiceAccountTokenKey]) > 0:
		return tokenSecret, nil
	case err == nil:
		return nil, nil
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	tokenSecret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: sa.Namespace, Name: name, Labels: managedBy(),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name},
		},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if err := c.Create(ctx, tokenSecret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return nil, nil
}

// removeIdentity deletes the identity from a member that stays, on unenrol:
// its roles, bindings (also those in managed namespaces), admission policy,
// token and ServiceAccount. Namespaces and their objects stay.
func removeIdentity(ctx context.Context, c client.Client) error {
	var errs []error
	namespaces := &corev1.NamespaceList{}
	if err := c.List(ctx, namespaces, client.MatchingLabels{ManagedNamespaceLabel: "true"}); err != nil {
		errs = append(errs, err)
	}
	objs := []client.Object{}
	for _, ns := range namespaces.Items {
		objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: hubIdentity}})
	}
	objs = append(objs,
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: hubIdentity}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: hubIdentity}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.SystemNamespace, Name: hubIdentity + capacitySuffix}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.SystemNamespace, Name: hubIdentity + capacitySuffix}},
	)
	for _, name := range []string{hubIdentity, hubIdentity + grantedSuffix, hubIdentity + namespacedSuffix} {
		objs = append(objs, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	objs = append(objs,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.SystemNamespace, Name: hubTokenSecret}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.SystemNamespace, Name: hubIdentity}},
	)
	for _, o := range objs {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }

// admin is a connection with CAPI's admin kubeconfig.
type admin struct {
	config    *rest.Config
	client    client.Client
	discovery discovery.DiscoveryInterface
}

// adminClient connects with CAPI's kubeconfig Secret and returns the
// kubeconfig's cluster entry, which the scoped identity's kubeconfig reuses.
func adminClient(kubeconfig *corev1.Secret) (*admin, *clientcmdapi.Cluster, error) {
	data := kubeconfig.Data[secret.KubeconfigDataName]
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, nil, fmt.Errorf("parse kubeconfig Secret %s/%s: %w", kubeconfig.Namespace, kubeconfig.Name, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig Secret %s/%s: %w", kubeconfig.Namespace, kubeconfig.Name, err)
	}
	kctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok || raw.Clusters[kctx.Cluster] == nil {
		return nil, nil, fmt.Errorf("kubeconfig Secret %s/%s has no current cluster", kubeconfig.Namespace, kubeconfig.Name)
	}
	cluster := raw.Clusters[kctx.Cluster].DeepCopy()
	cluster.LocationOfOrigin = ""
	cfg.UserAgent, cfg.Timeout = "flotilla-manager/enrolment", memberTimeout
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("admin client for kubeconfig Secret %s/%s: %w", kubeconfig.Namespace, kubeconfig.Name, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return &admin{config: cfg, client: c, discovery: cs.Discovery()}, cluster, nil
}

// observe looks at the member as the scoped identity: version, discovery and
// the estimator's capacity ConfigMap. Reading the ConfigMap doubles as the
// check that the identity still has its RBAC (discovery is open to anyone
// authenticated).
func observe(ctx context.Context, cfg *rest.Config) (*observation, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = memberTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	classify := func(what string, err error) error {
		if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
			return fmt.Errorf("%s: %w: %w", what, errIdentityRejected, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	obs := &observation{}
	cm, err := cs.CoreV1().ConfigMaps(clusterv1alpha1.SystemNamespace).Get(ctx, clusterv1alpha1.CapacityModelConfigMap, metav1.GetOptions{})
	switch {
	case err == nil:
		obs.capacity = cm
	case !apierrors.IsNotFound(err):
		return nil, classify("read the capacity model", err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, classify("read the server version", err)
	}
	obs.version = v.GitVersion
	_, obs.resources, err = cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, classify("discover the API", err)
		}
		obs.partial = true
	}
	return obs, nil
}
