package enrolment

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	agentmanifests "github.com/flotilla-io/flotilla/addon/agent/manifests"
	estimatormanifests "github.com/flotilla-io/flotilla/addon/estimator/manifests"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
)

// Add-ons are installed by Cluster API's ClusterResourceSet controller, which
// already holds the admin kubeconfig and re-applies on change (strategy
// Reconcile): a CRS and its resources live in the Cluster's namespace.
const (
	// estimatorAddon names the CRS and ConfigMap of flotilla-estimator, one
	// pair per namespace holding enrolled Clusters, selecting every Cluster
	// labelled flotilla.io/member.
	estimatorAddon       = "flotilla-estimator"
	estimatorManifestKey = "estimator.yaml"
	agentManifestKey     = "agent.yaml"
	hubCredentialsKey    = "hub-credentials.yaml"

	// agentTokenSecret is the agent's hub token Secret in flotilla-es-<member>.
	agentTokenSecret = "flotilla-agent-token"
	agentRole        = "flotilla-agent"
)

// agentAddon names the per-member CRS, ConfigMap, hub ServiceAccount and
// ClusterRole of a Pull-mode member's agent; the CRS Secret adds "-hub".
func agentAddon(member string) string { return "flotilla-agent-" + member }

// reconcileEstimator keeps the namespace's estimator CRS and manifests.
func (r *Reconciler) reconcileEstimator(ctx context.Context, s *scope) (bool, error) {
	if r.EstimatorImage == "" {
		return true, nil
	}
	manifests, err := estimatormanifests.Render(estimatormanifests.Params{Image: r.EstimatorImage, Version: r.Version, PublishInterval: r.EstimatorPublishInterval})
	if err != nil {
		return false, err
	}
	ns := s.cluster.Namespace
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: estimatorAddon}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.uncached(), cm, func() error {
		cm.Labels, cm.Data = managedBy(), map[string]string{estimatorManifestKey: string(manifests)}
		return nil
	}); err != nil {
		return false, r.addonsFailed(s, fmt.Errorf("write ConfigMap %s/%s: %w", ns, estimatorAddon, err))
	}
	selector := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: clusterv1alpha1.MemberLabel, Operator: metav1.LabelSelectorOpExists}}}
	if err := r.applyCRS(ctx, ns, estimatorAddon, selector, nil, addonsv1.ResourceRef{Kind: string(addonsv1.ConfigMapClusterResourceSetResourceKind), Name: estimatorAddon}); err != nil {
		return false, r.addonsFailed(s, err)
	}
	return true, nil
}

// reconcileAgent gives a Pull-mode member its agent: a hub ServiceAccount
// confined to the member's execution namespace and MemberCluster, its token
// as a kubeconfig, and a per-member CRS that installs the agent and that
// kubeconfig. A member that is not (or no longer) in Pull mode has none.
func (r *Reconciler) reconcileAgent(ctx context.Context, s *scope) (bool, error) {
	if syncMode(s.member) != clusterv1alpha1.Pull {
		crs := &addonsv1.ClusterResourceSet{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: agentAddon(s.memberName)}, crs)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return true, r.removeAgent(ctx, s.cluster.Namespace, s.memberName)
	}
	if r.AgentImage == "" {
		return false, r.addonsFailed(s, errors.New("member is in Pull mode but flotilla-manager has no --agent-image"))
	}
	token, err := r.applyAgentCredentials(ctx, s)
	if err != nil {
		return false, r.addonsFailed(s, fmt.Errorf("hub credentials of the agent of member %s: %w", s.memberName, err))
	}
	if token == nil {
		s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.WaitingForTokenReason,
			"waiting for the hub to fill in the token of Secret %s/%s", clusterv1alpha1.ExecutionNamespace(s.memberName), agentTokenSecret)
		s.requeue(tokenPoll)
		return false, nil
	}
	ca := token.Data[corev1.ServiceAccountRootCAKey]
	if len(ca) == 0 {
		ca = r.HubCAData
	}
	kubeconfig, err := memberclient.Kubeconfig("hub", &clientcmdapi.Cluster{Server: r.HubAPIServer, CertificateAuthorityData: ca}, string(token.Data[corev1.ServiceAccountTokenKey]))
	if err != nil {
		return false, err
	}
	if err := r.applyAgentAddon(ctx, s, kubeconfig); err != nil {
		return false, r.addonsFailed(s, err)
	}
	return true, nil
}

// applyAgentCredentials writes the agent's hub ServiceAccount and RBAC and
// returns its token Secret once filled in.
func (r *Reconciler) applyAgentCredentials(ctx context.Context, s *scope) (*corev1.Secret, error) {
	member, ns := s.memberName, clusterv1alpha1.ExecutionNamespace(s.memberName)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentAddon(member)}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentRole}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentRole}}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: agentAddon(member)}}
	clusterBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentAddon(member)}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}
	for _, w := range []struct {
		obj    client.Object
		mutate func()
	}{
		{sa, func() {}},
		{role, func() {
			role.Rules = agentHubRules()
		}},
		{binding, func() {
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: agentRole}
			binding.Subjects = subjects
		}},
		{clusterRole, func() {
			clusterRole.Rules = agentMemberClusterRules(member)
		}},
		{clusterBinding, func() {
			clusterBinding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name}
			clusterBinding.Subjects = subjects
		}},
	} {
		if _, err := controllerutil.CreateOrUpdate(ctx, r.uncached(), w.obj, func() error {
			w.mutate()
			for k, v := range managedBy() {
				setLabel(w.obj, k, v)
			}
			setLabel(w.obj, clusterv1alpha1.MemberLabel, member)
			return controllerutil.SetOwnerReference(s.member, w.obj, r.Client.Scheme())
		}); err != nil {
			return nil, fmt.Errorf("write %T %s: %w", w.obj, w.obj.GetName(), err)
		}
	}
	return ensureTokenSecret(ctx, r.uncached(), sa, agentTokenSecret)
}

// agentHubRules are the agent's rights in its execution namespace on the
// hub: read its Works and write their status; update Works only to add or
// remove its execution finalizer — RBAC cannot say "only finalizers", the
// hub's admission policy flotilla-agent-works (config/admission) refuses
// any other change; create its Lease and renew only that one; record
// events. Nothing else: no Secrets, no other Works, no Work creation.
func agentHubRules() []rbacv1.PolicyRule {
	group := workv1alpha1.GroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"works"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{group}, Resources: []string{"works/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{clusterv1alpha1.AgentLeaseName}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// agentMemberClusterRules let the agent read its own MemberCluster and
// write only its status: never its spec (sync mode, taints, placement).
// It reads the ResourceInterpreterCustomizations too: the platform's
// scripts judge health, reflect status and retain member values of the
// objects it applies, as the hub does for Push members.
func agentMemberClusterRules(member string) []rbacv1.PolicyRule {
	group := clusterv1alpha1.GroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"memberclusters"}, ResourceNames: []string{member}, Verbs: []string{"get"}},
		{APIGroups: []string{group}, Resources: []string{"memberclusters/status"}, ResourceNames: []string{member}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{configv1alpha1.GroupVersion.Group}, Resources: []string{"resourceinterpretercustomizations"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// applyAgentAddon writes the per-member CRS with the agent's rights in the
// member (agentrights.go), its manifests (ConfigMap) and hub kubeconfig
// (Secret of the CRS type).
func (r *Reconciler) applyAgentAddon(ctx context.Context, s *scope, kubeconfig []byte) error {
	ns, name := s.cluster.Namespace, agentAddon(s.memberName)
	manifests, err := agentmanifests.Render(agentmanifests.Params{Member: s.memberName, Image: r.AgentImage, Version: r.Version})
	if err != nil {
		return err
	}
	credentials, err := agentmanifests.RenderHubCredentials(s.memberName, kubeconfig)
	if err != nil {
		return err
	}
	owner := func(o client.Object) error {
		o.SetLabels(managedBy())
		setLabel(o, clusterv1alpha1.MemberLabel, s.memberName)
		return controllerutil.SetOwnerReference(s.cluster, o, r.Client.Scheme())
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.uncached(), cm, func() error {
		cm.Data = map[string]string{agentManifestKey: string(manifests)}
		return owner(cm)
	}); err != nil {
		return fmt.Errorf("write ConfigMap %s/%s: %w", ns, name, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-hub"}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.uncached(), sec, func() error {
		sec.Type = addonsv1.ClusterResourceSetSecretType
		sec.Data = map[string][]byte{hubCredentialsKey: credentials}
		return owner(sec)
	}); err != nil {
		return fmt.Errorf("write Secret %s/%s: %w", ns, sec.Name, err)
	}
	rights, err := r.applyAgentRights(ctx, s)
	if err != nil {
		return err
	}
	// The rights come first: the agent's admission policy is in force, and
	// it holds no write, before its Deployment exists.
	selector := metav1.LabelSelector{MatchLabels: map[string]string{clusterv1alpha1.MemberLabel: s.memberName}}
	return r.applyCRS(ctx, ns, name, selector, s.cluster,
		addonsv1.ResourceRef{Kind: string(addonsv1.ConfigMapClusterResourceSetResourceKind), Name: rights},
		addonsv1.ResourceRef{Kind: string(addonsv1.ConfigMapClusterResourceSetResourceKind), Name: cm.Name},
		addonsv1.ResourceRef{Kind: string(addonsv1.SecretClusterResourceSetResourceKind), Name: sec.Name})
}

// applyCRS writes a ClusterResourceSet with strategy Reconcile, owned by
// owner when given. ClusterResourceSets are watched, so read from the cache.
func (r *Reconciler) applyCRS(ctx context.Context, ns, name string, selector metav1.LabelSelector, owner client.Object, resources ...addonsv1.ResourceRef) error {
	crs := &addonsv1.ClusterResourceSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, crs, func() error {
		crs.Labels = managedBy()
		crs.Spec.ClusterSelector = selector
		crs.Spec.Resources = resources
		crs.Spec.SetTypedStrategy(addonsv1.ClusterResourceSetStrategyReconcile)
		if owner != nil {
			return controllerutil.SetOwnerReference(owner, crs, r.Client.Scheme())
		}
		return nil
	}); err != nil {
		return fmt.Errorf("write ClusterResourceSet %s/%s: %w", ns, name, err)
	}
	return nil
}

// removeAgent deletes a member's agent add-on and hub credentials.
func (r *Reconciler) removeAgent(ctx context.Context, clusterNamespace, member string) error {
	name, ns := agentAddon(member), clusterv1alpha1.ExecutionNamespace(member)
	return r.deleteAll(ctx,
		&addonsv1.ClusterResourceSet{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: agentRightsConfigMap(member)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: name + "-hub"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentTokenSecret}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentRole}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentRole}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
	)
}

func (r *Reconciler) deleteAll(ctx context.Context, objs ...client.Object) error {
	var errs []error
	for _, o := range objs {
		if err := r.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %T %s: %w", o, client.ObjectKeyFromObject(o), err))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) addonsFailed(s *scope, err error) error {
	s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.AddonsFailedReason, "%s", err.Error())
	r.Recorder.Eventf(s.cluster, s.member, corev1.EventTypeWarning, clusterv1alpha1.AddonsFailedReason, "InstallAddons", "%s", err.Error())
	return err
}
