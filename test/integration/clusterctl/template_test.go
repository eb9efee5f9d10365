package clusterctl_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Groups whose CRDs ship in the Cluster API module: the template's objects
// of these groups are checked against their schemas here. The Docker
// provider's kinds (DockerCluster, DockerMachineTemplate) are not: CAPD's
// CRDs come with CAPD's release, which is not available offline; the kind
// e2e (E2E_BACKEND=kind) creates them for real.
var clusterAPIGroups = []string{"cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io"}

// templates/cluster-template-flotilla.yaml, rendered by clusterctl, passes
// the OpenAPI schemas and CEL rules of Cluster API's v1beta2 CRDs (core,
// kubeadm bootstrap, kubeadm control plane) on a real apiserver, as a
// server-side dry-run. Cluster API's webhooks do not run here.
func TestClusterTemplatePassesClusterAPISchemas(t *testing.T) {
	api := startAPIServer(t)
	capi := clusterAPIDir(t)
	api.installCRDs(t, crdsFromFiles(t,
		filepath.Join(capi, "core", "config", "crd", "bases", "*.yaml"),
		filepath.Join(capi, "bootstrap", "kubeadm", "config", "crd", "bases", "*.yaml"),
		filepath.Join(capi, "controlplane", "kubeadm", "config", "crd", "bases", "*.yaml"),
	))
	ctx := ctxFor(t, time.Minute)
	if err := api.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}); err != nil {
		t.Fatal(err)
	}

	reader := config.NewMemoryReader()
	reader.Set("FLOTILLA_REGION", "eu-west")
	cfg, err := config.New(ctx, "", config.InjectReader(reader))
	if err != nil {
		t.Fatal(err)
	}
	c, err := clusterctl.New(ctx, "", clusterctl.InjectConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := c.GetClusterTemplate(context.Background(), clusterctl.GetClusterTemplateOptions{
		URLSource:                &clusterctl.URLSourceOptions{URL: filepath.Join(repoRoot, "templates", "cluster-template-flotilla.yaml")},
		ClusterName:              "fleet-a",
		TargetNamespace:          "fleet",
		KubernetesVersion:        "v1.36.3",
		ControlPlaneMachineCount: ptr.To[int64](3),
		WorkerMachineCount:       ptr.To[int64](2),
	})
	if err != nil {
		t.Fatalf("clusterctl generate cluster: %v", err)
	}
	var checked, notChecked []string
	for _, o := range tmpl.Objs() {
		if !slices.Contains(clusterAPIGroups, o.GroupVersionKind().Group) {
			notChecked = append(notChecked, o.GetKind())
			continue
		}
		checked = append(checked, o.GetKind())
		if err := api.client.Create(ctx, o.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s is refused: %v", kindName(&o), err)
		}
	}
	slices.Sort(checked)
	slices.Sort(notChecked)
	if want := []string{"Cluster", "KubeadmConfigTemplate", "KubeadmControlPlane", "MachineDeployment"}; !slices.Equal(checked, want) {
		t.Errorf("checked %v against Cluster API's schemas, want %v", checked, want)
	}
	if want := []string{"DockerCluster", "DockerMachineTemplate", "DockerMachineTemplate"}; !slices.Equal(notChecked, want) {
		t.Errorf("left %v unchecked, want only the Docker provider's kinds %v", notChecked, want)
	}
}
