package scheduling_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/cli"
)

// kubeconfig writes the test apiserver's admin credentials for the CLI.
func kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := cli.NewRootCommand()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig(t)))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("kubectl flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out.String()
}

func TestPreviewComputesThePlacementWithoutWritingIt(t *testing.T) {
	member(t, "pv-a", "r9", "64", 1)
	member(t, "pv-b", "r9", "1", 1) // holds 10 replicas of 100m
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: preview-web, namespace: default}
spec:
  replicas: 30
  selector: {matchLabels: {app: preview-web}}
  template:
    metadata: {labels: {app: preview-web}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 100m}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: preview-web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: preview-web}]
  placement:
    clusterAffinity: {labelSelector: {matchLabels: {region: r9}}}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [pv-a]}, weight: 1}
        - {targetCluster: {clusterNames: [pv-b]}, weight: 2}
`
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runCLI(t, "preview", "-f", file)
	// Weights 1:2 ask for 10:20, but pv-b holds only 10: its share is capped
	// and the rest goes to pv-a.
	if !strings.Contains(out, "Placement:    pv-a:20, pv-b:10") {
		t.Errorf("preview output:\n%s", out)
	}
	list := &workv1alpha1.ResourceBindingList{}
	if err := env.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	for _, b := range list.Items {
		if b.Spec.Resource.Name == "preview-web" {
			t.Errorf("preview wrote a binding: %s", b.Name)
		}
	}
}

func TestExplainShowsThePlacementAndWhyMembersWereDropped(t *testing.T) {
	member(t, "ex-a", "r8", "64", 1)
	member(t, "ex-b", "r8", "64", 1)
	b := binding(t, "explained", 3, staticWeights(map[string]int64{"ex-a": 1, "ex-b": 1, "ex-missing": 1}))
	// The placement and the decision record are two writes: wait for both.
	waitFor(t, b, "placed, the decision recorded", func(b *workv1alpha1.ResourceBinding) bool {
		return (placement(b) == "ex-a:2,ex-b:1" || placement(b) == "ex-a:1,ex-b:2") &&
			b.Status.SchedulingDecision != nil && b.Status.SchedulerObservedGeneration == b.Generation
	})
	out := runCLI(t, "explain", "deployment/explained", "-n", "default")
	for _, want := range []string{"Scheduled:    True (Success)", "Placement:    ex-a:", "Strategy:     Divided/StaticWeighted", "MEMBER", "ex-a", "ex-b"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
}
