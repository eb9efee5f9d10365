package fleet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/e2e/fleet/provider"
	"github.com/flotilla-io/flotilla/test/freeport"
)

// Hub is the management cluster: etcd, kube-apiserver and
// kube-controller-manager, Cluster API's core manager, the test provider and
// (optionally) flotilla-manager.
type Hub struct {
	cp       *controlPlane
	kcm      *process
	capi     *process
	flotilla *process
	// standby is the second flotilla-manager of an HA pair (StartHA).
	standby *process
	// managerOpts is how flotilla-manager was started, for StartHA and
	// StopHA.
	managerOpts Options

	providerCancel context.CancelFunc
	providerDone   chan struct{}

	// Client is an admin client of the hub.
	Client client.Client
	scheme *runtime.Scheme

	metricsURL string

	// managerToken and managerKubeconfig authenticate as the manager's
	// ServiceAccount (installIdentity).
	managerToken, managerKubeconfig string

	outagesMu sync.Mutex
	outages   []Outage
}

// Outage is a time the hub apiserver was stopped: from StopAPIServer until
// it serves again and authorizes the manager as before.
type Outage struct{ From, To time.Time }

// Outages lists the hub apiserver's outages so far; one still under way
// has a zero To.
func (h *Hub) Outages() []Outage {
	h.outagesMu.Lock()
	defer h.outagesMu.Unlock()
	return append([]Outage(nil), h.outages...)
}

// MetricsURL is flotilla-manager's metrics endpoint (HTTPS, authenticated
// by hub tokens); empty when the fleet runs no flotilla-manager.
func (h *Hub) MetricsURL() string { return h.metricsURL }

// Kubeconfig is the path of an admin kubeconfig of the hub.
func (h *Hub) Kubeconfig() string { return h.cp.Kubeconfig }

// RESTConfig is an admin client configuration of the hub.
func (h *Hub) RESTConfig() *rest.Config { return h.cp.RESTConfig() }

// Server is the hub apiserver's URL.
func (h *Hub) Server() string { return h.cp.Server() }

// AuditLog is the path of the hub apiserver's audit log.
func (h *Hub) AuditLog() string { return h.cp.AuditLog() }

// Dir holds the hub's state and logs.
func (h *Hub) Dir() string { return h.cp.dir }

// StopAPIServer stops the hub's kube-apiserver; etcd keeps its state. Every
// controller of the hub (Cluster API, flotilla-manager) loses its API until
// StartAPIServer.
func (h *Hub) StopAPIServer() error {
	h.outagesMu.Lock()
	h.outages = append(h.outages, Outage{From: time.Now()})
	h.outagesMu.Unlock()
	return h.cp.stopAPIServer()
}

// StartAPIServer restarts the hub's kube-apiserver on the same port, with
// the same certificates and tokens, and waits until it is ready and
// authorizes the manager again.
func (h *Hub) StartAPIServer(ctx context.Context) error {
	if err := h.cp.startAPIServer(ctx); err != nil {
		return err
	}
	if h.managerToken != "" {
		if err := h.waitManagerAuthorized(ctx); err != nil {
			return err
		}
	}
	h.outagesMu.Lock()
	if n := len(h.outages); n > 0 && h.outages[n-1].To.IsZero() {
		h.outages[n-1].To = time.Now()
	}
	h.outagesMu.Unlock()
	return nil
}

func (h *Hub) start(ctx context.Context, opts Options, members provider.Members) error {
	opts.progress("hub: starting etcd and kube-apiserver")
	if err := h.cp.start(ctx); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	c, err := client.New(h.cp.RESTConfig(), client.Options{Scheme: h.scheme})
	if err != nil {
		return err
	}
	h.Client = c
	h.kcm = controllerManager(h.cp)
	if err := h.kcm.start(); err != nil {
		return fmt.Errorf("hub: %w", err)
	}

	opts.progress("hub: installing Cluster API, Flotilla and test provider CRDs")
	if err := h.installCRDs(opts); err != nil {
		return fmt.Errorf("hub: %w", err)
	}

	opts.progress("hub: installing flotilla-manager's ServiceAccount, RBAC and admission policies from the release")
	if err := h.installIdentity(ctx, opts); err != nil {
		return fmt.Errorf("hub: %w", err)
	}

	opts.progress("hub: starting Cluster API core manager and the test provider")
	if err := h.startCAPI(ctx); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := h.startProvider(members); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if opts.Manager != nil {
		opts.progress("hub: starting flotilla-manager")
		if err := h.startFlotilla(ctx, opts); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
	}
	return nil
}

func (h *Hub) installCRDs(opts Options) error {
	providerCRDs, err := decodeCRDs(provider.CRDs)
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(h.cp.RESTConfig(), envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(opts.BinDir, "capi-crds"), filepath.Join(opts.RepoRoot, "config", "crd", "bases")},
		CRDs:               providerCRDs,
		ErrorIfPathMissing: true,
		MaxTime:            time.Minute,
	})
	return err
}

func decodeCRDs(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range splitYAML(data) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("decode provider CRD: %w", err)
		}
		if crd.Name != "" {
			out = append(out, crd)
		}
	}
	return out, nil
}

// startCAPI runs Cluster API's core manager as its own process, with the
// flags a management cluster gives it; its webhooks are served but not
// registered, so objects are written complete.
func (h *Hub) startCAPI(ctx context.Context) error {
	certDir := filepath.Join(h.cp.dir, "capi-webhook-certs")
	if err := writeServingCert(certDir); err != nil {
		return err
	}
	ports, err := freeport.Loopback(3)
	if err != nil {
		return err
	}
	healthAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	h.capi = newProcess("capi-manager", filepath.Join(h.cp.bin, "capi-manager"), filepath.Join(h.cp.dir, "logs"),
		"--kubeconfig="+h.cp.Kubeconfig,
		"--leader-elect=false",
		"--webhook-port="+strconv.Itoa(ports[0]),
		"--webhook-cert-dir="+certDir,
		"--health-addr="+healthAddr,
		"--diagnostics-address=127.0.0.1:"+strconv.Itoa(ports[2]),
		"--insecure-diagnostics",
		// A member whose apiserver stops is reported within seconds.
		"--remote-connection-grace-period=20s",
		"--v=2",
	)
	if err := h.capi.start(); err != nil {
		return err
	}
	return waitHTTPOK(ctx, "Cluster API manager readiness", "http://"+healthAddr+"/readyz", time.Minute, h.capi)
}

// startProvider runs the test infrastructure and control-plane provider in
// this process; its controller-runtime log goes to logs/test-provider.log
// like every other component's, not to the terminal.
func (h *Hub) startProvider(members provider.Members) error {
	logger, logFile, err := FileLogger(filepath.Join(h.cp.dir, "logs", "test-provider.log"), 2)
	if err != nil {
		return fmt.Errorf("test provider: %w", err)
	}
	mgr, err := ctrl.NewManager(h.cp.RESTConfig(), ctrl.Options{
		Logger:                 logger,
		Scheme:                 h.scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		_ = logFile.Close()
		return fmt.Errorf("test provider manager: %w", err)
	}
	if err := provider.SetupWithManager(mgr, members); err != nil {
		_ = logFile.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logger))
	h.providerCancel, h.providerDone = cancel, make(chan struct{})
	go func() {
		defer close(h.providerDone)
		defer logFile.Close()
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "fleet: test provider stopped:", err)
		}
	}()
	return nil
}

// startFlotilla runs flotilla-manager as its own process with the flags a
// user gives it, and registers its webhooks with the hub at its loopback port.
func (h *Hub) startFlotilla(ctx context.Context, opts Options) error {
	h.managerOpts = opts
	p, webhookPort, err := h.startManager(ctx, "flotilla-manager", opts.Manager.Args)
	if err != nil {
		return err
	}
	h.flotilla = p
	return h.registerWebhooks(ctx, opts, h.webhookCertDir(), webhookPort)
}

func (h *Hub) webhookCertDir() string { return filepath.Join(h.cp.dir, "flotilla-webhook-certs") }

// startManager runs one flotilla-manager process with args on free loopback
// ports and waits for it to be ready; it returns its webhook port.
func (h *Hub) startManager(ctx context.Context, name string, args []string) (*process, int, error) {
	certDir := h.webhookCertDir()
	if _, err := os.Stat(filepath.Join(certDir, "tls.crt")); err != nil {
		if err := writeServingCert(certDir); err != nil {
			return nil, 0, err
		}
	}
	ports, err := freeport.Loopback(3)
	if err != nil {
		return nil, 0, err
	}
	healthAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	args = append([]string{
		"--kubeconfig=" + h.managerKubeconfig,
		"--webhook-port=" + strconv.Itoa(ports[0]),
		"--webhook-cert-dir=" + certDir,
		"--health-probe-bind-address=" + healthAddr,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(ports[2]),
	}, args...)
	h.metricsURL = "https://127.0.0.1:" + strconv.Itoa(ports[2]) + "/metrics"
	p := newProcess(name, h.managerOpts.Manager.Binary, filepath.Join(h.cp.dir, "logs"), args...)
	if err := p.start(); err != nil {
		return nil, 0, err
	}
	if err := waitHTTPOK(ctx, name+" readiness", "http://"+healthAddr+"/readyz", time.Minute, p); err != nil {
		return nil, 0, err
	}
	return p, ports[0], nil
}

// LeaseName is the leader election Lease of flotilla-manager, in
// flotilla-system.
const LeaseName = "flotilla-manager"

// StartHA replaces the fleet's flotilla-manager with an HA pair as the
// release runs it: two processes with leader election (Lease
// flotilla-system/flotilla-manager, the given timings), started one after
// the other so that the first one leads and the second waits as a standby.
// extraArgs come last, so they override the fleet's manager flags. The
// webhooks keep pointing at the first, as a Service would until its
// endpoints change: write no object that a webhook checks after killing it.
func (h *Hub) StartHA(ctx context.Context, leaseDuration, renewDeadline, retryPeriod time.Duration, extraArgs ...string) error {
	if h.flotilla == nil {
		return fmt.Errorf("the fleet runs no flotilla-manager")
	}
	if err := h.flotilla.stop(10 * time.Second); err != nil {
		return err
	}
	var args []string
	for _, a := range h.managerOpts.Manager.Args {
		if !strings.HasPrefix(a, "--leader-elect") {
			args = append(args, a)
		}
	}
	args = append(args, "--leader-elect=true", "--leader-election-namespace=flotilla-system",
		"--leader-elect-lease-duration="+leaseDuration.String(), "--leader-elect-renew-deadline="+renewDeadline.String(),
		"--leader-elect-retry-period="+retryPeriod.String())
	args = append(args, extraArgs...)
	leader, webhookPort, err := h.startManager(ctx, "flotilla-manager-a", args)
	if err != nil {
		return err
	}
	h.flotilla = leader
	if err := h.registerWebhooks(ctx, h.managerOpts, h.webhookCertDir(), webhookPort); err != nil {
		return err
	}
	if err := h.waitLeader(ctx); err != nil {
		return err
	}
	standby, _, err := h.startManager(ctx, "flotilla-manager-b", args)
	if err != nil {
		return err
	}
	h.standby = standby
	return nil
}

// waitLeader waits until some manager holds the Lease.
func (h *Hub) waitLeader(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		lease := &coordinationv1.Lease{}
		err := h.Client.Get(ctx, client.ObjectKey{Namespace: "flotilla-system", Name: LeaseName}, lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no flotilla-manager took the Lease flotilla-system/%s within a minute (last error %v)", LeaseName, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// KillLeader kills the leading manager of the HA pair with SIGKILL: it
// neither releases its Lease nor finishes what it was doing.
func (h *Hub) KillLeader() error {
	if h.standby == nil {
		return fmt.Errorf("the fleet runs no HA pair")
	}
	if err := h.flotilla.signal(syscall.SIGKILL); err != nil {
		return err
	}
	return h.flotilla.stop(10 * time.Second) // reaps it
}

// StopHA stops the HA pair and starts the fleet's single flotilla-manager
// again, its webhooks registered anew.
func (h *Hub) StopHA(ctx context.Context) error {
	if h.standby != nil {
		_ = h.standby.stop(10 * time.Second)
		h.standby = nil
	}
	if h.flotilla != nil {
		_ = h.flotilla.stop(10 * time.Second)
	}
	return h.startFlotilla(ctx, h.managerOpts)
}

// registerWebhooks installs config/webhook with each webhook pointed at the
// manager's loopback port instead of an in-cluster Service.
func (h *Hub) registerWebhooks(ctx context.Context, opts Options, certDir string, port int) error {
	data, err := os.ReadFile(filepath.Join(opts.RepoRoot, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
	if err != nil {
		return err
	}
	url := func(path *string) admissionregistrationv1.WebhookClientConfig {
		u := "https://127.0.0.1:" + strconv.Itoa(port) + *path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caPEM}
	}
	for _, doc := range splitYAML(data) {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal(doc, &kind); err != nil {
			continue
		}
		var cfg, existing client.Object
		switch kind.Kind {
		case "ValidatingWebhookConfiguration":
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, vwc); err != nil {
				return fmt.Errorf("register webhooks: %w", err)
			}
			vwc.Name = "flotilla-validating-webhook-configuration"
			for i := range vwc.Webhooks {
				vwc.Webhooks[i].ClientConfig = url(vwc.Webhooks[i].ClientConfig.Service.Path)
			}
			cfg, existing = vwc, &admissionregistrationv1.ValidatingWebhookConfiguration{}
		case "MutatingWebhookConfiguration":
			mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, mwc); err != nil {
				return fmt.Errorf("register webhooks: %w", err)
			}
			mwc.Name = "flotilla-mutating-webhook-configuration"
			for i := range mwc.Webhooks {
				mwc.Webhooks[i].ClientConfig = url(mwc.Webhooks[i].ClientConfig.Service.Path)
			}
			cfg, existing = mwc, &admissionregistrationv1.MutatingWebhookConfiguration{}
		default:
			continue
		}
		err := h.Client.Create(ctx, cfg)
		if apierrors.IsAlreadyExists(err) {
			// A manager started again listens elsewhere: point the
			// existing configuration at it.
			if err = h.Client.Get(ctx, client.ObjectKeyFromObject(cfg), existing); err == nil {
				cfg.SetResourceVersion(existing.GetResourceVersion())
				err = h.Client.Update(ctx, cfg)
			}
		}
		if err != nil {
			return fmt.Errorf("register webhooks: %w", err)
		}
	}
	return nil
}

func (h *Hub) stop() {
	if h.standby != nil {
		_ = h.standby.stop(10 * time.Second)
	}
	if h.flotilla != nil {
		_ = h.flotilla.stop(10 * time.Second)
	}
	if h.providerCancel != nil {
		h.providerCancel()
		<-h.providerDone
	}
	if h.capi != nil {
		_ = h.capi.stop(10 * time.Second)
	}
	if h.kcm != nil {
		_ = h.kcm.stop(5 * time.Second)
	}
	h.cp.stop()
}

func writeServingCert(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)
}
