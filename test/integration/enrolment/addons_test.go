package enrolment_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// documents splits a multi-document YAML into its objects' raw documents.
func documents(t *testing.T, data string) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewBufferString(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read YAML: %v", err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}

func kindOf(t *testing.T, doc []byte) string {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return tm.Kind
}

func TestEstimatorClusterResourceSetSelectsEnrolledClusters(t *testing.T) {
	ns := "enrol-addons"
	createCluster(t, ns, "with-addons", clusterOpts{labels: enrolled})
	waitEnrolled(t, "with-addons")

	crs := &addonsv1.ClusterResourceSet{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "flotilla-estimator"}, crs); err != nil {
		t.Fatalf("estimator ClusterResourceSet: %v", err)
	}
	if crs.Spec.Strategy != string(addonsv1.ClusterResourceSetStrategyReconcile) ||
		!slices.Equal(crs.Spec.Resources, []addonsv1.ResourceRef{{Kind: "ConfigMap", Name: "flotilla-estimator"}}) {
		t.Errorf("strategy %q, resources %+v; want Reconcile and ConfigMap flotilla-estimator", crs.Spec.Strategy, crs.Spec.Resources)
	}
	want := []metav1.LabelSelectorRequirement{{Key: clusterv1alpha1.MemberLabel, Operator: metav1.LabelSelectorOpExists}}
	if len(crs.Spec.ClusterSelector.MatchLabels) > 0 || !slices.EqualFunc(crs.Spec.ClusterSelector.MatchExpressions, want, func(a, b metav1.LabelSelectorRequirement) bool {
		return a.Key == b.Key && a.Operator == b.Operator && len(a.Values) == 0
	}) {
		t.Errorf("selector %+v, want %s exists", crs.Spec.ClusterSelector, clusterv1alpha1.MemberLabel)
	}
	sel, err := metav1.LabelSelectorAsSelector(&crs.Spec.ClusterSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(getCluster(t, ns, "with-addons").Labels)) {
		t.Errorf("the selector does not select the enrolled Cluster")
	}

	cm := &corev1.ConfigMap{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "flotilla-estimator"}, cm); err != nil {
		t.Fatalf("estimator manifests: %v", err)
	}
	var kinds []string
	for _, doc := range documents(t, cm.Data["estimator.yaml"]) {
		kind := kindOf(t, doc)
		kinds = append(kinds, kind)
		switch kind {
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict(doc, d); err != nil {
				t.Fatalf("decode Deployment: %v", err)
			}
			if d.Namespace != "flotilla-system" || d.Spec.Template.Spec.ServiceAccountName != "flotilla-estimator" ||
				d.Spec.Template.Spec.Containers[0].Image != estimatorImg || d.Labels["app.kubernetes.io/version"] != "v0.0.0-test" {
				t.Errorf("Deployment %s/%s sa %s image %s version %s; want flotilla-system, flotilla-estimator, %s, v0.0.0-test",
					d.Namespace, d.Name, d.Spec.Template.Spec.ServiceAccountName, d.Spec.Template.Spec.Containers[0].Image, d.Labels["app.kubernetes.io/version"], estimatorImg)
			}
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			if err := yaml.UnmarshalStrict(doc, r); err != nil {
				t.Fatal(err)
			}
			want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch"}}}
			if fmt.Sprint(r.Rules) != fmt.Sprint(want) {
				t.Errorf("estimator ClusterRole rules %v, want read-only nodes and pods", r.Rules)
			}
		}
	}
	if want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"}; !slices.Equal(kinds, want) {
		t.Errorf("estimator manifests hold %v, want %v", kinds, want)
	}

	// Deleted by hand, it is put back.
	if err := hub.Client.Delete(ctx(), crs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the estimator ClusterResourceSet to be re-created", func() error {
		again := &addonsv1.ClusterResourceSet{}
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(crs), again); err != nil {
			return err
		}
		if again.UID == crs.UID {
			return fmt.Errorf("still the deleted one")
		}
		return nil
	})
}

func TestPullModeMemberGetsAgentWithConfinedHubCredentials(t *testing.T) {
	ns := "enrol-pull"
	c := createCluster(t, ns, "puller", clusterOpts{labels: enrolled, annotations: map[string]string{clusterv1alpha1.SyncModeAnnotation: "Pull"}})
	m := waitEnrolled(t, "puller")
	if m.Spec.SyncMode != clusterv1alpha1.Pull || m.Status.IdentitySecretRef != nil {
		t.Errorf("syncMode %s, identitySecretRef %+v; want Pull and no push identity", m.Spec.SyncMode, m.Status.IdentitySecretRef)
	}

	crs := &addonsv1.ClusterResourceSet{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "flotilla-agent-puller"}, crs); err != nil {
		t.Fatalf("agent ClusterResourceSet: %v", err)
	}
	// The agent's rights first: its admission policy and read-only roles are
	// in the member before its Deployment.
	wantRes := []addonsv1.ResourceRef{{Kind: "ConfigMap", Name: "flotilla-agent-puller-rights"}, {Kind: "ConfigMap", Name: "flotilla-agent-puller"}, {Kind: "Secret", Name: "flotilla-agent-puller-hub"}}
	if !slices.Equal(crs.Spec.Resources, wantRes) || crs.Spec.ClusterSelector.MatchLabels[clusterv1alpha1.MemberLabel] != "puller" ||
		crs.Spec.Strategy != string(addonsv1.ClusterResourceSetStrategyReconcile) {
		t.Errorf("agent CRS selector %+v resources %+v strategy %s; want %s=puller, %+v, Reconcile",
			crs.Spec.ClusterSelector, crs.Spec.Resources, crs.Spec.Strategy, clusterv1alpha1.MemberLabel, wantRes)
	}
	if len(crs.OwnerReferences) != 1 || crs.OwnerReferences[0].UID != c.UID {
		t.Errorf("agent CRS owners %+v, want the Cluster", crs.OwnerReferences)
	}

	agent := &corev1.ConfigMap{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "flotilla-agent-puller"}, agent); err != nil {
		t.Fatal(err)
	}
	var image string
	for _, doc := range documents(t, agent.Data["agent.yaml"]) {
		if kindOf(t, doc) == "Deployment" {
			d := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict(doc, d); err != nil {
				t.Fatal(err)
			}
			image = d.Spec.Template.Spec.Containers[0].Image
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--member=puller") {
				t.Errorf("agent args %v lack --member=puller", d.Spec.Template.Spec.Containers[0].Args)
			}
		}
	}
	if image != agentImg {
		t.Errorf("agent image %q, want %q", image, agentImg)
	}

	// The credentials, as the member will receive them.
	wrapper := &corev1.Secret{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "flotilla-agent-puller-hub"}, wrapper); err != nil {
		t.Fatal(err)
	}
	if wrapper.Type != addonsv1.ClusterResourceSetSecretType {
		t.Errorf("credentials Secret type %q, want %q", wrapper.Type, addonsv1.ClusterResourceSetSecretType)
	}
	inner := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(wrapper.Data["hub-credentials.yaml"], inner); err != nil {
		t.Fatalf("decode the agent's hub credentials: %v", err)
	}
	if inner.Namespace != "flotilla-system" || inner.Name != "flotilla-agent-hub" {
		t.Errorf("credentials land in %s/%s, want flotilla-system/flotilla-agent-hub", inner.Namespace, inner.Name)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(inner.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	asAgent, err := client.New(cfg, client.Options{Scheme: hub.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// Allowed: its own MemberCluster and the Works of its execution namespace.
	own := &clusterv1alpha1.MemberCluster{}
	if err := asAgent.Get(ctx(), client.ObjectKey{Name: "puller"}, own); err != nil {
		t.Errorf("agent cannot read its MemberCluster: %v", err)
	}
	if err := asAgent.Status().Update(ctx(), own); err != nil {
		t.Errorf("agent cannot update its MemberCluster's status: %v", err)
	}
	if err := asAgent.List(ctx(), &workv1alpha1.WorkList{}, client.InNamespace("flotilla-es-puller")); err != nil {
		t.Errorf("agent cannot list its Works: %v", err)
	}
	// Refused: other members, other namespaces, Secrets.
	for what, err := range map[string]error{
		"another MemberCluster":        asAgent.Get(ctx(), client.ObjectKey{Name: "someone-else"}, &clusterv1alpha1.MemberCluster{}),
		"all MemberClusters":           asAgent.List(ctx(), &clusterv1alpha1.MemberClusterList{}),
		"Works of another namespace":   asAgent.List(ctx(), &workv1alpha1.WorkList{}, client.InNamespace("flotilla-es-other")),
		"Secrets of its own namespace": asAgent.List(ctx(), &corev1.SecretList{}, client.InNamespace("flotilla-es-puller")),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("agent reading %s: got %v, want Forbidden", what, err)
		}
	}
}
