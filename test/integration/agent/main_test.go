// Package agent_test specifies flotilla-agent against real apiservers: the
// hub is test/testenv's kube-apiserver with Flotilla's and Cluster API's
// CRDs, and a plain envtest apiserver is the Pull-mode member "edge". On the
// hub, enrolment runs in-process and issues the agent's credentials exactly
// as in production (a CAPI Cluster annotated flotilla.io/sync-mode: Pull);
// the hub's execution controller runs too, for the switch between Push and
// Pull. In the member, the agent's own RBAC from addon/agent/manifests is
// installed and the agent runs in-process as that ServiceAccount, with the
// hub kubeconfig enrolment put into the add-on Secret written to a file —
// what the agent's Pod mounts. flotilla-estimator runs in-process in the
// member, so that the capacity model the agent reports is the real one.
package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/flotilla-io/flotilla/addon/agent"
	"github.com/flotilla-io/flotilla/addon/agent/credentials"
	agentmanifests "github.com/flotilla-io/flotilla/addon/agent/manifests"
	"github.com/flotilla-io/flotilla/addon/estimator"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/enrolment"
	"github.com/flotilla-io/flotilla/controllers/execution"
	model "github.com/flotilla-io/flotilla/internal/estimator"
	"github.com/flotilla-io/flotilla/test/testenv"
)

// The fleet of this suite.
const (
	// edge is the Pull-mode member, enrolled from the CAPI Cluster
	// edge-clusters/edge; other is a second member the agent must not touch.
	edge, other  = "edge", "other"
	clusterNS    = "edge-clusters"
	agentImg     = "registry.example/flotilla-agent:test"
	syncPeriod   = time.Second
	leaseRenewal = time.Second
)

var (
	hub *testenv.Env

	// memberAdmin is the member's admin client; memberConfig its config.
	memberAdmin  client.Client
	memberConfig *rest.Config

	// credentialsFile is the agent's hub kubeconfig, as its Pod mounts it.
	credentialsFile string

	// requests counts the writes that reach the member, by who sent them.
	requests = &memberWrites{}

	// agentInMember authenticates to the member as the agent's ServiceAccount.
	agentInMember *rest.Config
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent integration tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	// Quiet unless FLOTILLA_TEST_LOG is set: failures say what they waited for.
	logger := logr.Discard()
	if os.Getenv("FLOTILLA_TEST_LOG") != "" {
		logger = klog.Background()
	}
	ctrl.SetLogger(logger)
	root, err := testenv.RepoRoot()
	if err != nil {
		return 0, err
	}
	if hub, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = hub.Stop() }()
	memberEnv := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin")}
	if _, err := memberEnv.Start(); err != nil {
		return 0, fmt.Errorf("start member apiserver: %w", err)
	}
	defer func() { _ = memberEnv.Stop() }()
	admin, err := memberEnv.AddUser(envtest.User{Name: "capi-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return 0, err
	}
	memberConfig = admin.Config()
	if memberAdmin, err = client.New(memberConfig, client.Options{Scheme: clientgoscheme.Scheme}); err != nil {
		return 0, err
	}
	adminKubeconfig, err := admin.KubeConfig()
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "flotilla-agent-test-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	credentialsFile = filepath.Join(dir, "hub-kubeconfig")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := testenv.InstallAdmissionPolicies(ctx, hub.Client, "agent_works.yaml"); err != nil {
		return 0, err
	}
	go testenv.FillServiceAccountTokens(ctx, hub.Config, 200*time.Millisecond)
	if err := startHubControllers(ctx); err != nil {
		return 0, err
	}
	for _, name := range []string{edge, other} {
		if err := enrolPullCluster(ctx, name, adminKubeconfig); err != nil {
			return 0, err
		}
	}
	agentMember, err := installAgentInMember(ctx)
	if err != nil {
		return 0, err
	}
	agentInMember = agentMember
	go edgeResourceSet.run(ctx)
	kubeconfig, err := issuedHubCredentials(ctx)
	if err != nil {
		return 0, err
	}
	if err := writeCredentials(kubeconfig); err != nil {
		return 0, err
	}
	if err := startEstimator(ctx); err != nil {
		return 0, err
	}
	stopAgent := startAgent(ctx, agentMember)
	defer stopAgent()
	return m.Run(), nil
}

// Resync periods of the hub's execution controller: short, so that status
// reaches the hub within a second.
var resync = applier.Options{ResyncUnhealthy: 500 * time.Millisecond, ResyncHealthy: 3 * time.Second}

// agentResync: short while something is not applied or not healthy (the
// agent's rights in the member arrive after its first Works), and long once
// healthy, so that drift is repaired only by the watch of what the agent
// applied (controllers/memberwatch).
var agentResync = applier.Options{ResyncUnhealthy: 500 * time.Millisecond, ResyncHealthy: 5 * time.Minute}

// startHubControllers runs enrolment and Push execution on the hub. The
// execution controller reaches the member as its admin (the hub's scoped
// identity is enrolment's business, tested in test/integration/enrolment).
func startHubControllers(ctx context.Context) error {
	mgr, err := ctrl.NewManager(hub.Config, ctrl.Options{
		Scheme:                 hub.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return err
	}
	r := &enrolment.Reconciler{Options: enrolment.Options{
		AgentImage: agentImg, Version: "v0.0.0-test", SyncPeriod: syncPeriod,
		HubAPIServer: hub.Config.Host, HubCAData: hub.Config.CAData,
	}}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return err
	}
	asHub := rest.CopyConfig(memberConfig)
	asHub.WrapTransport = requests.count("hub")
	hubSide, err := client.New(asHub, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	exec := &execution.Reconciler{Client: mgr.GetClient(), MemberClients: staticMembers{edge: hubSide},
		Recorder: mgr.GetEventRecorder("flotilla-execution"), Options: resync}
	if err := exec.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "hub manager stopped:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("hub manager cache did not sync")
	}
	return nil
}

type staticMembers map[string]client.Client

func (s staticMembers) ClientFor(_ context.Context, member string) (client.Client, meta.RESTMapper, error) {
	c, ok := s[member]
	if !ok {
		return nil, nil, fmt.Errorf("no client for member %s", member)
	}
	return c, c.RESTMapper(), nil
}

// enrolPullCluster writes a CAPI Cluster as Cluster API leaves it once its
// control plane is up, annotated for Pull mode, and waits for enrolment.
func enrolPullCluster(ctx context.Context, name string, kubeconfig []byte) error {
	c := hub.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNS}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: name + "-kubeconfig", Labels: map[string]string{capiv1.ClusterNameLabel: name}},
		Type:       capiv1.ClusterSecretType,
		Data:       map[string][]byte{"value": kubeconfig},
	}); err != nil {
		return err
	}
	cluster := &capiv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: name,
			Labels:      map[string]string{clusterv1alpha1.EnrolLabel: "true"},
			Annotations: map[string]string{clusterv1alpha1.SyncModeAnnotation: string(clusterv1alpha1.Pull)}},
		Spec: capiv1.ClusterSpec{
			ControlPlaneEndpoint: capiv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
			ControlPlaneRef:      capiv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: name},
			InfrastructureRef:    capiv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: name},
		},
	}
	if err := c.Create(ctx, cluster); err != nil {
		return err
	}
	// The enrolment controller adds its finalizer as soon as the Cluster
	// exists, so the status write retries on conflict with a fresh copy.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return err
		}
		now := metav1.Now()
		cluster.Status.Initialization = capiv1.ClusterInitializationStatus{InfrastructureProvisioned: ptrTo(true), ControlPlaneInitialized: ptrTo(true)}
		cluster.Status.Conditions = []metav1.Condition{
			{Type: capiv1.ClusterRemoteConnectionProbeCondition, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", LastTransitionTime: now},
			{Type: capiv1.ClusterControlPlaneAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: now},
		}
		return c.Status().Update(ctx, cluster)
	})
	if err != nil {
		return err
	}
	return poll(ctx, "member "+name+" Enrolled", func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(m.Status.Conditions, clusterv1alpha1.ConditionEnrolled); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("Enrolled = %+v", cond)
		}
		return nil
	})
}

// installAgentInMember applies the agent's manifests as its
// ClusterResourceSet installs them in the member, but the Deployment (the
// agent runs in-process), and returns a member config that authenticates as
// the agent's ServiceAccount. Its rights arrive through the same
// ClusterResourceSet (edgeResourceSet).
func installAgentInMember(ctx context.Context) (*rest.Config, error) {
	manifests, err := agentmanifests.Render(agentmanifests.Params{Member: edge, Image: agentImg, Version: "v0.0.0-test"})
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if len(u.Object) == 0 || u.GetKind() == "Deployment" {
			continue
		}
		if err := memberAdmin.Create(ctx, u); client.IgnoreAlreadyExists(err) != nil {
			return nil, fmt.Errorf("install %s %s in the member: %w", u.GetKind(), u.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(memberConfig)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(clusterv1alpha1.SystemNamespace).CreateToken(ctx, "flotilla-agent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token of the agent's ServiceAccount in the member: %w", err)
	}
	return &rest.Config{Host: memberConfig.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: memberConfig.CAData}}, nil
}

// issuedHubCredentials reads the agent's hub kubeconfig from the add-on
// Secret enrolment keeps for the edge member's ClusterResourceSet: the Secret
// manifest the ClusterResourceSet applies in the member, with the kubeconfig.
func issuedHubCredentials(ctx context.Context) ([]byte, error) {
	wrapper := &corev1.Secret{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterNS, Name: "flotilla-agent-" + edge + "-hub"}, wrapper); err != nil {
		return nil, fmt.Errorf("the agent's add-on Secret: %w", err)
	}
	inner := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(wrapper.Data["hub-credentials.yaml"], inner); err != nil {
		return nil, fmt.Errorf("decode the agent's hub credentials: %w", err)
	}
	if inner.Name != agentmanifests.HubSecret || len(inner.Data[agentmanifests.KubeconfigKey]) == 0 {
		return nil, fmt.Errorf("the add-on Secret carries Secret %s with keys %v, want %s with %s", inner.Name, keys(inner.Data), agentmanifests.HubSecret, agentmanifests.KubeconfigKey)
	}
	return inner.Data[agentmanifests.KubeconfigKey], nil
}

// writeCredentials replaces the mounted kubeconfig in one step, as the
// kubelet swaps a Secret volume's content.
func writeCredentials(kubeconfig []byte) error {
	tmp := credentialsFile + ".new"
	if err := os.WriteFile(tmp, kubeconfig, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, credentialsFile)
}

// startEstimator gives the member a Ready Node and runs flotilla-estimator
// against it, as its add-on does.
func startEstimator(ctx context.Context) error {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resourceMust("4"), corev1.ResourceMemory: resourceMust("16Gi"), corev1.ResourcePods: resourceMust("110")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge-node-1", Labels: map[string]string{corev1.LabelHostname: "edge-node-1"}}}
	if err := memberAdmin.Create(ctx, node); err != nil {
		return err
	}
	node.Status = corev1.NodeStatus{Capacity: alloc, Allocatable: alloc, Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if err := memberAdmin.Status().Update(ctx, node); err != nil {
		return err
	}
	go func() {
		_ = estimator.Run(ctx, kubernetes.NewForConfigOrDie(memberConfig), estimator.Config{
			Namespace: clusterv1alpha1.SystemNamespace, ConfigMap: clusterv1alpha1.CapacityModelConfigMap,
			PublishInterval: 200 * time.Millisecond, Model: model.DefaultOptions(),
		})
	}()
	return nil
}

// startAgent runs flotilla-agent in-process as the member's agent
// ServiceAccount with the mounted hub credentials; its writes to the member
// are counted as "agent".
func startAgent(ctx context.Context, asAgent *rest.Config) (stop func()) {
	asAgent = rest.CopyConfig(asAgent)
	asAgent.WrapTransport = requests.count("agent")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := agent.Run(ctx, agent.Config{
			Member:             edge,
			Credentials:        &credentials.File{Path: credentialsFile, Interval: 200 * time.Millisecond},
			MemberConfig:       asAgent,
			Holder:             "flotilla-agent-test",
			Execution:          agentResync,
			StatusPeriod:       500 * time.Millisecond,
			Heartbeat:          5 * time.Second,
			LeaseRenewInterval: leaseRenewal,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "agent stopped:", err)
		}
	}()
	return func() { cancel(); <-done }
}

// memberWrites counts the server-side applies that reach the member, by
// sender and request path.
type memberWrites struct {
	mu      sync.Mutex
	applies map[string]map[string]int
}

func (w *memberWrites) count(who string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
				w.mu.Lock()
				if w.applies == nil {
					w.applies = map[string]map[string]int{}
				}
				if w.applies[who] == nil {
					w.applies[who] = map[string]int{}
				}
				w.applies[who][req.URL.Path]++
				w.mu.Unlock()
			}
			return next.RoundTrip(req)
		})
	}
}

// of is how many server-side applies who sent for the object at path, e.g.
// /api/v1/namespaces/app/configmaps/settings.
func (w *memberWrites) of(who, path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.applies[who][path]
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// poll retries f every 100ms for a minute at most; for setup, where there
// is no *testing.T.
func poll(ctx context.Context, what string, f func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
