package fleet

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/flotilla-io/flotilla/test/freeport"
)

// controlPlane is etcd plus kube-apiserver, serving TLS on a loopback port,
// authenticating an admin by a static token and ServiceAccounts by their
// tokens, authorizing with RBAC, and writing an audit log of who did what.
type controlPlane struct {
	name string
	dir  string
	bin  string

	etcd      *process
	apiserver *process

	port       int
	adminToken string
	caPEM      []byte
	Kubeconfig string
	config     *rest.Config
}

func newControlPlane(name, dir, bin string) *controlPlane {
	return &controlPlane{name: name, dir: dir, bin: bin}
}

// Server is the apiserver's URL.
func (cp *controlPlane) Server() string { return "https://127.0.0.1:" + strconv.Itoa(cp.port) }

// RESTConfig returns an admin client configuration.
func (cp *controlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(cp.config) }

// AuditLog is the path of the apiserver's audit log.
func (cp *controlPlane) AuditLog() string { return filepath.Join(cp.dir, "audit.log") }

func (cp *controlPlane) prepare() error {
	for _, d := range []string{cp.dir, filepath.Join(cp.dir, "logs"), filepath.Join(cp.dir, "pki")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	ports, err := freeport.Loopback(3)
	if err != nil {
		return err
	}
	cp.port = ports[0]
	pki := filepath.Join(cp.dir, "pki")

	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	if err != nil {
		return fmt.Errorf("serving certificate for %s: %w", cp.name, err)
	}
	cp.caPEM = certPEM
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(saKey)
	if err != nil {
		return err
	}
	cp.adminToken = randomToken()
	audit := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
	files := map[string][]byte{
		"serving.crt": certPEM,
		"serving.key": keyPEM,
		"sa.key":      saKeyPEM,
		"tokens.csv":  []byte(cp.adminToken + ",fleet-admin,fleet-admin-uid,system:masters\n"),
		"audit.yaml":  []byte(audit),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pki, name), data, 0o600); err != nil {
			return err
		}
	}

	logs := filepath.Join(cp.dir, "logs")
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[2])
	cp.etcd = newProcess("etcd", filepath.Join(cp.bin, "etcd"), logs,
		"--name=default",
		"--data-dir="+filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	cp.apiserver = newProcess("kube-apiserver", filepath.Join(cp.bin, "kube-apiserver"), logs,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(cp.port),
		"--tls-cert-file="+filepath.Join(pki, "serving.crt"),
		"--tls-private-key-file="+filepath.Join(pki, "serving.key"),
		"--token-auth-file="+filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(pki, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--audit-policy-file="+filepath.Join(pki, "audit.yaml"),
		"--audit-log-path="+cp.AuditLog(),
		"--audit-log-maxsize=100",
		"--v=1",
	)

	cp.config = &rest.Config{
		Host:            cp.Server(),
		BearerToken:     cp.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.caPEM},
		QPS:             100,
		Burst:           200,
	}
	cp.Kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	return writeKubeconfig(cp.Kubeconfig, cp.name, cp.Server(), cp.caPEM, cp.adminToken)
}

// start starts etcd, then kube-apiserver, and waits until it is ready.
func (cp *controlPlane) start(ctx context.Context) error {
	if cp.etcd == nil {
		if err := cp.prepare(); err != nil {
			return err
		}
	}
	if !cp.etcd.running() {
		if err := cp.etcd.start(); err != nil {
			return err
		}
	}
	return cp.startAPIServer(ctx)
}

// startAPIServer (re)starts kube-apiserver on its port and waits for /readyz.
func (cp *controlPlane) startAPIServer(ctx context.Context) error {
	if err := cp.apiserver.start(); err != nil {
		return err
	}
	return cp.waitReady(ctx, 2*time.Minute)
}

// stopAPIServer stops kube-apiserver; etcd keeps the cluster's state.
func (cp *controlPlane) stopAPIServer() error { return cp.apiserver.stop(10 * time.Second) }

func (cp *controlPlane) waitReady(ctx context.Context, timeout time.Duration) error {
	httpClient, err := rest.HTTPClientFor(cp.config)
	if err != nil {
		return err
	}
	return waitFor(ctx, cp.name+" kube-apiserver /readyz", timeout, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cp.Server()+"/readyz", nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	}, cp.etcd, cp.apiserver)
}

func (cp *controlPlane) stop() {
	if cp.apiserver != nil {
		_ = cp.apiserver.stop(10 * time.Second)
	}
	if cp.etcd != nil {
		_ = cp.etcd.stop(10 * time.Second)
	}
}

func writeKubeconfig(path, name, server string, caPEM []byte, token string) error {
	data, err := kubeconfigBytes(name, server, caPEM, token)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func kubeconfigBytes(name, server string, caPEM []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
