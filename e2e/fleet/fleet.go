package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/e2e/fleet/provider"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
)

// Options configure a fleet.
type Options struct {
	// Dir holds the fleet's state, kubeconfigs and logs; created if absent.
	Dir string
	// RepoRoot is the Flotilla checkout (CRDs, webhook configuration).
	RepoRoot string
	// BinDir holds the binaries `make test-bins` builds; RepoRoot/bin when empty.
	BinDir string
	// AddonBinDir holds Flotilla's own binaries (flotilla-estimator,
	// flotilla-agent) that run next to members; BinDir when empty.
	AddonBinDir string
	// Members to start. Each gets a CAPI Cluster on the hub.
	Members []MemberSpec
	// Manager runs flotilla-manager on the hub when set.
	Manager *ManagerOptions
	// Progress receives one line per step; nil for silence.
	Progress io.Writer
}

// ManagerOptions say how to run flotilla-manager.
type ManagerOptions struct {
	// Binary is the path of flotilla-manager.
	Binary string
	// Args are extra flags, as a user passes them.
	Args []string
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "fleet: "+format+"\n", args...)
	}
}

// Fleet is a running hub and its members.
type Fleet struct {
	opts    Options
	Hub     *Hub
	mu      sync.Mutex
	members []*Member
	stopped bool

	// addonsCtx ends when the fleet stops; add-on runners watch it.
	addonsCtx  context.Context
	stopAddons context.CancelFunc
}

// Scheme has every API a hub client of the fleet uses.
func Scheme() *runtime.Scheme { return hubscheme.New() }

// Start starts the hub and the members, and creates each member's CAPI
// Cluster. On error, everything started so far is stopped.
func Start(ctx context.Context, opts Options) (f *Fleet, err error) {
	if opts.RepoRoot == "" {
		return nil, errors.New("fleet: Options.RepoRoot is required")
	}
	if opts.BinDir == "" {
		opts.BinDir = filepath.Join(opts.RepoRoot, "bin")
	}
	if opts.AddonBinDir == "" {
		opts.AddonBinDir = opts.BinDir
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml", "capi-manager", "capi-crds"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("fleet: %s not found in %s: run `make test-bins`", b, opts.BinDir)
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	f = &Fleet{opts: opts}
	f.addonsCtx, f.stopAddons = context.WithCancel(context.Background())
	f.Hub = &Hub{cp: newControlPlane("hub", filepath.Join(opts.Dir, "hub"), opts.BinDir), scheme: Scheme()}
	for _, spec := range opts.Members {
		f.members = append(f.members, newMember(spec, opts.Dir, opts.BinDir))
	}
	defer func() {
		if err != nil {
			f.Stop()
			f = nil
		}
	}()

	// The hub and the members start side by side: apiservers take seconds each.
	errs := make(chan error, 1+len(f.members))
	go func() { errs <- f.Hub.start(ctx, opts, f) }()
	for _, m := range f.members {
		go func(m *Member) {
			opts.progress("member %s: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok", m.Name())
			errs <- m.start(ctx)
		}(m)
	}
	var startErrs []error
	for range 1 + len(f.members) {
		if err := <-errs; err != nil {
			startErrs = append(startErrs, err)
		}
	}
	if err := errors.Join(startErrs...); err != nil {
		return f, err
	}
	for _, m := range f.members {
		opts.progress("member %s: creating CAPI Cluster %s/%s", m.Name(), m.Spec.Namespace, m.Name())
		if err := f.CreateCluster(ctx, m); err != nil {
			return f, err
		}
		f.runAddons(m)
	}
	return f, nil
}

// AddMember starts one more member and creates its CAPI Cluster.
func (f *Fleet) AddMember(ctx context.Context, spec MemberSpec) (*Member, error) {
	m := newMember(spec, f.opts.Dir, f.opts.BinDir)
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return nil, errStopped
	}
	for _, other := range f.members {
		if other.Spec.Name == m.Spec.Name && other.Spec.Namespace == m.Spec.Namespace {
			f.mu.Unlock()
			return nil, fmt.Errorf("member %s/%s already exists", m.Spec.Namespace, m.Spec.Name)
		}
	}
	f.members = append(f.members, m)
	f.mu.Unlock()
	f.opts.progress("member %s/%s: starting", m.Spec.Namespace, m.Name())
	if err := m.start(ctx); err != nil {
		return m, err
	}
	if err := f.CreateCluster(ctx, m); err != nil {
		return m, err
	}
	f.runAddons(m)
	return m, nil
}

// RemoveMember stops a member's processes (its CAPI Cluster is left alone).
func (f *Fleet) RemoveMember(m *Member) {
	f.mu.Lock()
	for i, other := range f.members {
		if other == m {
			f.members = append(f.members[:i], f.members[i+1:]...)
			break
		}
	}
	f.mu.Unlock()
	m.stop()
}

func (f *Fleet) runAddons(m *Member) {
	m.addons = newAddons(m, f.opts.AddonBinDir)
	go m.addons.run(f.addonsCtx)
}

// Members lists the members in the order they were given.
func (f *Fleet) Members() []*Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Member(nil), f.members...)
}

// Member returns the member of a CAPI Cluster name, or nil.
func (f *Fleet) Member(name string) *Member {
	for _, m := range f.Members() {
		if m.Spec.Name == name {
			return m
		}
	}
	return nil
}

// Lookup implements provider.Members.
func (f *Fleet) Lookup(namespace, name string) (provider.Member, bool) {
	for _, m := range f.Members() {
		if m.Spec.Namespace == namespace && m.Spec.Name == name && m.Client != nil {
			kubeconfig, err := m.kubeconfigBytes()
			if err != nil {
				return provider.Member{}, false
			}
			return provider.Member{Kubeconfig: kubeconfig, KubernetesVersion: KubernetesVersion, Healthy: m.healthy}, true
		}
	}
	return provider.Member{}, false
}

// Stop stops every process of the fleet. It is safe to call more than once.
func (f *Fleet) Stop() {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return
	}
	f.stopped = true
	members := append([]*Member(nil), f.members...)
	f.mu.Unlock()
	if f.stopAddons != nil {
		f.stopAddons()
	}

	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func(m *Member) { defer wg.Done(); m.stop() }(m)
	}
	if f.Hub != nil {
		f.Hub.stop()
	}
	wg.Wait()
}

// Processes lists the pid of every process the fleet has running, by
// "<cluster>/<binary>".
func (f *Fleet) Processes() map[string]int {
	out := map[string]int{}
	add := func(owner string, procs ...*process) {
		for _, p := range procs {
			if p == nil {
				continue
			}
			p.mu.Lock()
			if p.cmd != nil && p.cmd.Process != nil {
				out[owner+"/"+p.name] = p.cmd.Process.Pid
			}
			p.mu.Unlock()
		}
	}
	if f.Hub != nil {
		add("hub", f.Hub.cp.etcd, f.Hub.cp.apiserver, f.Hub.kcm, f.Hub.capi, f.Hub.flotilla, f.Hub.standby)
	}
	for _, m := range f.Members() {
		add(m.Name(), m.cp.etcd, m.cp.apiserver, m.kcm, m.sched, m.kwok)
		if m.addons != nil {
			add(m.Name(), m.addons.processes()...)
		}
	}
	return out
}
