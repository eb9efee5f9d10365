package failover_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-io/flotilla/cli"
)

func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub.Config.Host, CertificateAuthorityData: hub.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: hub.Config.CertData, ClientKeyData: hub.Config.KeyData}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	cmd := cli.NewRootCommand()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append(args, "--kubeconfig", path))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("kubectl flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out.String()
}

func TestDrainByHandMovesWorkloadsAwayAndUncordonUndoesIt(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "cli-a")
	newMember(t, "cli-b")
	newBinding(t, "cli", "web", bindingOpts{replicas: 4, members: []string{"cli-a", "cli-b"}})
	waitPlacement(t, "cli", "web", "cli-a:2 cli-b:2", waitTimeout)

	out := runCLI(t, "drain", "cli-b")
	if out != "member/cli-b cordoned and tainted cluster.flotilla.io/cordoned:NoExecute\n" {
		t.Errorf("drain said %q", out)
	}
	m := getMember(t, "cli-b")
	if !m.Spec.Unschedulable || taintOf(m, "cluster.flotilla.io/cordoned", noExecute) == nil {
		t.Errorf("drained member: unschedulable %v, taints %v", m.Spec.Unschedulable, m.Spec.Taints)
	}
	b := waitPlacement(t, "cli", "web", "cli-a:4", 10*time.Second)
	if taskFor(b, "cli-b") == nil {
		t.Errorf("no eviction task for cli-b: %+v", b.Spec.GracefulEvictionTasks)
	}
	// The replacement is Ready: the copy on cli-b goes, and drain --wait sees it.
	reportHealthy(t, "cli", "web")
	if out := runCLI(t, "drain", "cli-b", "--wait", "10s"); !strings.Contains(out, "member/cli-b drained") {
		t.Errorf("drain --wait said %q", out)
	}

	runCLI(t, "uncordon", "cli-b")
	if m := getMember(t, "cli-b"); m.Spec.Unschedulable || len(m.Spec.Taints) > 0 {
		t.Errorf("after uncordon: unschedulable %v, taints %v", m.Spec.Unschedulable, m.Spec.Taints)
	}

	runCLI(t, "taint", "cli-b", "maintenance=kernel:NoSchedule")
	runCLI(t, "cordon", "cli-b")
	if m := getMember(t, "cli-b"); !m.Spec.Unschedulable || taintOf(m, "maintenance", noSchedule) == nil || taintOf(m, "maintenance", noSchedule).Value != "kernel" {
		t.Errorf("after taint and cordon: unschedulable %v, taints %v", m.Spec.Unschedulable, m.Spec.Taints)
	}
	runCLI(t, "taint", "cli-b", "maintenance-")
	if m := getMember(t, "cli-b"); len(m.Spec.Taints) > 0 {
		t.Errorf("after removing: %v", m.Spec.Taints)
	}
}
