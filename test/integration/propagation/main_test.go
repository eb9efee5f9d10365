// Package propagation_test specifies the propagation pipeline against real
// apiservers: the hub is test/testenv's kube-apiserver with Flotilla's CRDs,
// and two plain envtest apiservers (no CRDs, no controllers) stand in for
// members member1 and member2. The pipeline's controllers run in-process in
// one manager. No scheduler runs: tests write a binding's spec.clusters as
// the scheduler would. No garbage collector runs either, so everything the
// pipeline removes, it removes itself.
package propagation_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
	"github.com/flotilla-io/flotilla/controllers/memberwatch"
	"github.com/flotilla-io/flotilla/controllers/propagation"
	"github.com/flotilla-io/flotilla/internal/removal"
	"github.com/flotilla-io/flotilla/test/testenv"
)

// Members of the test fleet. hungMember's address accepts connections and
// never answers: a member whose apiserver hangs.
const (
	member1    = "member1"
	member2    = "member2"
	hungMember = "hung"
	// gatedMember is member2's apiserver under another name, through a
	// client whose applies into the namespace gatedNamespace wait until
	// openGate: a member slow to apply some objects.
	gatedMember    = "gated"
	gatedNamespace = "gated-slow"
)

var (
	hub *testenv.Env
	// members are the member apiservers' admin clients, by member name,
	// and memberConfigs their configurations.
	members       = map[string]client.Client{}
	memberConfigs = map[string]*rest.Config{}
	// hung is hungMember's client; its requests report to health.
	hung   client.Client
	health = &memberclient.Health{MinBackoff: 2 * time.Second, MaxBackoff: 4 * time.Second}
)

// Member isolation settings of the suite's execution controller: short, so
// that the hung member's tests take seconds.
const (
	memberTimeout   = 2 * time.Second
	withdrawTimeout = 4 * time.Second
)

// removals paces Work removals per member: a share of 1/4, at least 4, per
// 5 s window, so that a test removing a few Works is not slowed.
var removals = &removal.Limiter{Share: 0.25, Burst: 4, Window: 5 * time.Second}

// staticMembers is MemberClients over the members' admin clients: the hub's
// scoped identity is enrolment's business, not the pipeline's.
type staticMembers map[string]client.Client

func (s staticMembers) ClientFor(_ context.Context, member string) (client.Client, meta.RESTMapper, error) {
	c, ok := s[member]
	if !ok {
		return nil, nil, fmt.Errorf("no client for member %s", member)
	}
	return c, c.RESTMapper(), nil
}

var _ execution.MemberClients = staticMembers{}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "propagation integration tests:", err)
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

	stop, err := startApiservers()
	defer stop()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := enrolMembers(ctx); err != nil {
		return 0, err
	}
	stopHung, err := startHungMember(ctx)
	if err != nil {
		return 0, err
	}
	defer stopHung()
	if err := startManager(ctx); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// startApiservers starts the hub and the members at once: each takes a few
// seconds, mostly waiting.
func startApiservers() (stop func(), err error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return func() {}, err
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		errs     []error
		stoppers []func()
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		h, err := testenv.Start()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		hub = h
		stoppers = append(stoppers, func() { _ = h.Stop() })
	}()
	for _, name := range []string{member1, member2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin")}
			cfg, err := env.Start()
			if err == nil {
				var c client.Client
				c, err = client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
				mu.Lock()
				members[name], memberConfigs[name] = c, cfg
				mu.Unlock()
			}
			mu.Lock()
			defer mu.Unlock()
			stoppers = append(stoppers, func() { _ = env.Stop() })
			if err != nil {
				errs = append(errs, fmt.Errorf("start member %s: %w", name, err))
			}
		}()
	}
	wg.Wait()
	return func() {
		for _, s := range stoppers {
			s()
		}
	}, errors.Join(errs...)
}

// enrolMembers does what enrolment does for the pipeline: a MemberCluster
// and an execution namespace per member.
func enrolMembers(ctx context.Context) error {
	for name := range members {
		mc := &clusterv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet.example/name": name}},
			Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "default", Name: name}},
		}
		if err := hub.Client.Create(ctx, mc); err != nil {
			return fmt.Errorf("create MemberCluster %s: %w", name, err)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ExecutionNamespace(name)}}
		if err := hub.Client.Create(ctx, ns); err != nil {
			return fmt.Errorf("create execution namespace of %s: %w", name, err)
		}
	}
	return nil
}

// startHungMember enrols hungMember, whose address is a listener that
// accepts connections, reads what comes and never answers.
func startHungMember(ctx context.Context) (func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	stop := func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	cfg := &rest.Config{Host: "https://" + l.Addr().String(), TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		WrapTransport: health.Wrap(hungMember)}
	if hung, err = client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme}); err != nil {
		stop()
		return nil, err
	}
	mc := &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: hungMember},
		Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "default", Name: hungMember}},
	}
	if err := hub.Client.Create(ctx, mc); err != nil {
		stop()
		return nil, fmt.Errorf("create MemberCluster %s: %w", hungMember, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ExecutionNamespace(hungMember)}}
	if err := hub.Client.Create(ctx, ns); err != nil {
		stop()
		return nil, fmt.Errorf("create execution namespace of %s: %w", hungMember, err)
	}
	return stop, nil
}

// Resync periods of the execution controller: longer than any wait of the
// suite, so that member status written by a test reaches the hub only
// through the watch of applied objects (controllers/memberwatch), as it
// does in production. What else waits on a resync — a member identity's
// grant refused, no client yet — the suite does not exercise.
const (
	resyncUnhealthy = time.Minute
	resyncHealthy   = 5 * time.Minute
)

// settle is how long a test watches for something that must not happen.
const settle = 2 * time.Second

func startManager(ctx context.Context) error {
	mgr, err := ctrl.NewManager(hub.Config, ctrl.Options{
		Scheme:                 hub.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	all := staticMembers{hungMember: hung, gatedMember: nil}
	for name, c := range members {
		all[name] = c
	}
	if all[gatedMember], err = gatedClient(memberConfigs[member2]); err != nil {
		return err
	}
	err = propagation.SetupWithManager(ctx, mgr, propagation.Options{
		MemberClients: all,
		MemberWatches: memberwatch.ConnectionsFunc(func(_ context.Context, member string) (*rest.Config, error) {
			if member == gatedMember {
				member = member2
			}
			if cfg, ok := memberConfigs[member]; ok {
				return cfg, nil
			}
			return nil, fmt.Errorf("no watch of member %s", member)
		}),
		Execution:       execution.Options{ResyncUnhealthy: resyncUnhealthy, ResyncHealthy: resyncHealthy},
		Concurrency:     4,
		MemberHealth:    health,
		MemberTimeout:   memberTimeout,
		WithdrawTimeout: withdrawTimeout,
		Removals:        removals,
		Reports:         progress,
		Holds:           holds,
	})
	if err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("manager cache did not sync")
	}
	return nil
}
