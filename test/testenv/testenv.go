// Package testenv starts a real kube-apiserver and etcd (controller-runtime
// envtest, with the binaries `make test-bins` builds into bin/) with
// Flotilla's CRDs and admission webhooks installed, for integration tests.
// The webhooks are served in-process by a controller-runtime manager, as
// flotilla-manager serves them.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/webhooks"
)

// Env is a running apiserver with Flotilla's CRDs.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment
	cancel context.CancelFunc
}

// Scheme returns a scheme with the Kubernetes built-ins and Flotilla's APIs.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		clusterv1alpha1.AddToScheme, policyv1alpha1.AddToScheme, workv1alpha1.AddToScheme, configv1alpha1.AddToScheme,
		capiv1.AddToScheme, addonsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// RepoRoot finds the module root by walking up to go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "api")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

// Start starts etcd and kube-apiserver and installs Flotilla's CRDs. The
// binaries come from KUBEBUILDER_ASSETS, or bin/ of the repository.
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd", "capi-crds"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make test-bins` first", b, assets)
		}
	}
	scheme := Scheme()
	installOptions, err := webhookConfigurations(filepath.Join(root, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		// Cluster API's CRDs (copied from its module by `make test-bins`) and Flotilla's.
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(assets, "capi-crds")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		WebhookInstallOptions: installOptions,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("client for test apiserver: %w", err)
	}
	e := &Env{Config: cfg, Client: c, Scheme: scheme, env: env}
	if err := e.serveWebhooks(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return e, nil
}

// webhookNamePrefix is config/webhook's kustomize namePrefix: the
// configurations are installed under the names a release gives them, which
// the manager's ClusterRole names.
const webhookNamePrefix = "flotilla-"

// webhookConfigurations reads the generated webhook configurations with
// their release names.
func webhookConfigurations(path string) (envtest.WebhookInstallOptions, error) {
	opts := envtest.WebhookInstallOptions{}
	data, err := os.ReadFile(path)
	if err != nil {
		return opts, err
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return opts, fmt.Errorf("%s: %w", path, err)
		}
		switch kind.Kind {
		case "ValidatingWebhookConfiguration":
			cfg, err := releaseNamed([]byte(doc), &admissionregistrationv1.ValidatingWebhookConfiguration{})
			if err != nil {
				return opts, fmt.Errorf("%s: %w", path, err)
			}
			opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, cfg)
		case "MutatingWebhookConfiguration":
			cfg, err := releaseNamed([]byte(doc), &admissionregistrationv1.MutatingWebhookConfiguration{})
			if err != nil {
				return opts, fmt.Errorf("%s: %w", path, err)
			}
			opts.MutatingWebhooks = append(opts.MutatingWebhooks, cfg)
		}
	}
	if len(opts.ValidatingWebhooks) == 0 {
		return opts, fmt.Errorf("%s holds no ValidatingWebhookConfiguration: run `make generate`", path)
	}
	return opts, nil
}

// releaseNamed decodes doc into obj, named as the release names it.
func releaseNamed[T client.Object](doc []byte, obj T) (T, error) {
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return obj, err
	}
	obj.SetName(webhookNamePrefix + obj.GetName())
	return obj, nil
}

// serveWebhooks runs flotilla-manager's webhooks on the address envtest
// registered in the apiserver, and waits until they answer.
func (e *Env) serveWebhooks() error {
	opts := e.env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("webhook manager: %w", err)
	}
	if err := webhooks.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("register webhooks: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { _ = mgr.Start(ctx) }()
	if err := waitForWebhookServer(ctx, mgr); err != nil {
		cancel()
		return err
	}
	return nil
}

func waitForWebhookServer(ctx context.Context, mgr ctrl.Manager) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := mgr.GetWebhookServer().StartedChecker()(nil)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server did not start: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the webhooks, the apiserver and etcd.
func (e *Env) Stop() error {
	if e.cancel != nil {
		e.cancel()
	}
	return e.env.Stop()
}

// StartManager runs a manager of its own against e, with what setup
// registers, until the returned stop is called: for a test whose
// controllers must not share the hub with its suite's. Controller names may
// repeat those of another manager of the test process.
func (e *Env) StartManager(t testing.TB, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	return func() { cancel(); <-done }
}
