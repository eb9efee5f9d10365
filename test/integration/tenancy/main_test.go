// Package tenancy_test specifies the tenant roles Flotilla ships
// (config/rbac/tenant_roles.yaml) against a real kube-apiserver with
// Flotilla's CRDs and webhooks (test/testenv) and a real
// kube-controller-manager running only the clusterrole-aggregation
// controller, which folds the roles into Kubernetes' admin, edit and view.
// Tenants are impersonated users bound to those default roles in their
// namespace; every assertion is a real request, not an access review.
package tenancy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-io/flotilla/test/testenv"
)

var hub *testenv.Env

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tenancy integration tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if hub, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = hub.Stop() }()
	stop, err := startAggregation()
	if err != nil {
		return 0, err
	}
	defer stop()
	return m.Run(), nil
}

// startAggregation runs kube-controller-manager with only the
// clusterrole-aggregation controller against the hub.
func startAggregation() (func(), error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		bin = filepath.Join(root, "bin")
	}
	dir, err := os.MkdirTemp("", "flotilla-tenancy-kcm-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub.Config.Host, CertificateAuthorityData: hub.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: hub.Config.CertData, ClientKeyData: hub.Config.KeyData, Token: hub.Config.BearerToken}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	cfg.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return nil, err
	}
	kcm := exec.Command(filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--controllers=clusterrole-aggregation",
		"--leader-elect=false",
		"--secure-port=0",
	)
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	kcm.Stdout, kcm.Stderr = logFile, logFile
	if err := kcm.Start(); err != nil {
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	return func() {
		_ = kcm.Process.Kill()
		_ = kcm.Wait()
		_ = logFile.Close()
		_ = os.RemoveAll(dir)
	}, nil
}
