package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/test/testenv"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/flotilla-io/flotilla/addon/agent/lease"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
	"github.com/flotilla-io/flotilla/internal/memberstatus"
	"github.com/flotilla-io/flotilla/test/freeport"
)

// The memory benchmark's fleet and workload.
const (
	memNamespaces   = 10
	memPerNamespace = 1000 // Deployments per namespace: 10,000 in all
	memCreators     = 8    // goroutines creating templates
	// memFillTimeout is how long the manager may take to make and place
	// the bindings and Works; FLOTILLA_MEMBENCH_FILL_TIMEOUT (a Go duration)
	// overrides it, with go test's -timeout raised to match.
	memFillTimeout = 120 * time.Minute
	memSettle      = 60 * time.Second
	// The manager's client-side rate limit to the hub, raised from its
	// default (40/60) so that the fill takes minutes rather than tens.
	memKubeAPIQPS   = 1000
	memKubeAPIBurst = 2000
	memClusterNS    = "bench-fleet"
	// memSchedulerWorkers overlaps the scheduler's API writes (decisions
	// are still made one at a time).
	memSchedulerWorkers = 4
)

var memMembers = []string{"member1", "member2", "member3"}

// BenchmarkManagerMemory measures flotilla-manager's memory holding 10,000
// ResourceBindings and 30,000 Works. The built bin/flotilla-manager runs as a
// child process against a plain kube-apiserver and etcd (envtest, Cluster
// API's and Flotilla's CRDs, no webhooks, no kube-controller-manager), as a
// cluster admin, with leader election off and --kube-api-qps/burst raised to
// 1000/2000. Its fleet is three Pull-mode members enrolled from CAPI Clusters
// as Cluster API leaves them; the benchmark plays their agents on the hub:
// it renews each agent's Lease with the agent's own Renewer and writes the
// status an agent reports (version, API enablements, a capacity model with
// room for every replica, heartbeats), so that the members are Ready and
// schedulable while no agent pulls the Works. Ten federated namespaces hold
// 1,000 Deployment templates each, created by 8 goroutines at once, each
// namespace with a PropagationPolicy that duplicates Deployments on the three
// members: the manager's detector, scheduler and binding controller make
// 10,000 bindings and 30,000 Works. Once all are there and placed, the
// manager is left alone for 60 s, then its peak RSS (VmHWM) and RSS (VmRSS)
// are read from /proc and its Go heap from its metrics endpoint.
func BenchmarkManagerMemory(b *testing.B) {
	const templates = memNamespaces * memPerNamespace
	wantWorks := templates * len(memMembers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	for _, name := range []string{"kube-apiserver", "etcd", "capi-crds", "flotilla-manager"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			b.Fatalf("%s not found in %s: run `make test-bins build` first", name, bin)
		}
	}

	// The hub: kube-apiserver and etcd with the CRDs, nothing else.
	scheme := hubscheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(bin, "capi-crds")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	// Room in etcd for every object and its revisions until compaction.
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.Itoa(8<<30))
	cfg, err := env.Start()
	if err != nil {
		b.Fatalf("start kube-apiserver and etcd from %s: %v", bin, err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop kube-apiserver and etcd:", err)
		}
	}()
	cfg.QPS, cfg.Burst = 500, 1000
	hub, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}

	// The manager, as a cluster admin, with its log kept after the run.
	logDir, err := os.MkdirTemp("", "flotilla-membench-")
	if err != nil {
		b.Fatal(err)
	}
	admin, err := env.AddUser(envtest.User{Name: "flotilla-manager-bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		b.Fatalf("admin user for the manager: %v", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		b.Fatal(err)
	}
	kubeconfigPath := filepath.Join(logDir, "manager.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		b.Fatal(err)
	}
	mgr, err := startBenchManager(filepath.Join(bin, "flotilla-manager"), logDir, kubeconfigPath)
	if err != nil {
		b.Fatal(err)
	}
	defer mgr.stop()
	if err := mgr.waitReady(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}

	// Three Pull-mode members, Ready, with their "agents" on the hub; the
	// goroutines playing them stop before the manager and the apiserver.
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	go testenv.FillServiceAccountTokens(ctx, cfg, time.Second)
	for _, name := range memMembers {
		if err := enrolPullMember(ctx, hub, name); err != nil {
			b.Fatalf("%v\nmanager log: %s", err, mgr.logPath)
		}
	}
	status, err := agentStatus(cs.Discovery())
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range memMembers {
		if err := playAgent(ctx, hub, name, status); err != nil {
			b.Fatalf("%v\nmanager log: %s", err, mgr.logPath)
		}
	}
	if err := waitMembersSchedulable(ctx, hub, mgr, 2*time.Minute); err != nil {
		b.Fatalf("%v\nmanager log: %s", err, mgr.logPath)
	}

	// The workload.
	b.ResetTimer()
	start := time.Now()
	for i := range memNamespaces {
		if err := memCreateYAML(ctx, hub, duplicatedPolicy(fmt.Sprintf("mem-%02d", i))); err != nil {
			b.Fatal(err)
		}
	}
	if err := createTemplates(ctx, hub); err != nil {
		b.Fatalf("%v\nmanager log: %s", err, mgr.logPath)
	}
	created := time.Since(start)
	fmt.Fprintf(os.Stderr, "memory bench: %d Deployment templates created in %s; manager log %s\n", templates, created.Round(time.Second), mgr.logPath)
	counts, err := waitFilled(ctx, hub, mgr, start, templates, wantWorks)
	fill := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%v\nmanager log: %s", err, mgr.logPath)
	}

	time.Sleep(memSettle)
	if exited := mgr.exited(); exited != "" {
		b.Fatalf("flotilla-manager exited while settling: %s; log %s", exited, mgr.logPath)
	}
	proc, err := procStatus(mgr.pid())
	if err != nil {
		b.Fatal(err)
	}
	heap, heapErr := scrapeMetrics(mgr.metricsURL)
	errorLines, firstErrors := mgr.logErrors(5)

	mb := func(bytes float64) float64 { return bytes / (1 << 20) }
	b.ReportMetric(mb(proc["VmHWM"]), "peak-rss-MB")
	b.ReportMetric(mb(proc["VmRSS"]), "rss-MB")
	if heapErr == nil {
		b.ReportMetric(mb(heap["go_memstats_heap_inuse_bytes"]), "heap-inuse-MB")
		b.ReportMetric(mb(heap["go_memstats_heap_alloc_bytes"]), "heap-alloc-MB")
	}
	b.ReportMetric(fill.Seconds(), "fill-s")
	heapLine := "heap not read: " + fmt.Sprint(heapErr)
	if heapErr == nil {
		heapLine = fmt.Sprintf("Go heap in use %.0f MB, allocated %.0f MB, runtime total %.0f MB, %.0f goroutines",
			mb(heap["go_memstats_heap_inuse_bytes"]), mb(heap["go_memstats_heap_alloc_bytes"]), mb(heap["go_memstats_sys_bytes"]), heap["go_goroutines"])
	}
	fmt.Fprintf(os.Stderr, "flotilla-manager memory with %d ResourceBindings (%d placed on 3 members) and %d Works: peak RSS %.0f MB, RSS %.0f MB %s after the last one; %s; filled in %s (templates created in %s) with --kube-api-qps=%d --kube-api-burst=%d; %d error lines in its log %s\n",
		counts.bindings, counts.placed, counts.works, mb(proc["VmHWM"]), mb(proc["VmRSS"]), memSettle, heapLine,
		fill.Round(time.Second), created.Round(time.Second), memKubeAPIQPS, memKubeAPIBurst, errorLines, mgr.logPath)
	if errorLines > 0 {
		fmt.Fprintf(os.Stderr, "first error lines of the manager:\n%s\n", firstErrors)
	}
}

// benchManager is the flotilla-manager child process.
type benchManager struct {
	cmd        *exec.Cmd
	logPath    string
	logFile    *os.File
	metricsURL string
	healthURL  string
	done       chan struct{}
	mu         sync.Mutex
	end        string
}

// startBenchManager runs the manager in its own process group, killed with
// the benchmark, on free loopback ports: metrics over plain HTTP, no
// webhooks (a self-signed certificate all the same), no leader election.
func startBenchManager(binary, dir, kubeconfig string) (*benchManager, error) {
	ports, err := freeport.Loopback(3)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	if err := memServingCert(certDir); err != nil {
		return nil, err
	}
	m := &benchManager{
		logPath:    filepath.Join(dir, "manager.log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]),
		healthURL:  fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1]), // no /readyz: its only check is the webhook server's
		done:       make(chan struct{}),
	}
	if m.logFile, err = os.Create(m.logPath); err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--enable-webhooks=false",
		"--webhook-port=" + strconv.Itoa(ports[2]),
		"--webhook-cert-dir=" + certDir,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		"--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--kube-api-qps=%d", memKubeAPIQPS),
		fmt.Sprintf("--kube-api-burst=%d", memKubeAPIBurst),
		// One scheduling worker placed 1.1–1.6 bindings/s here, most of it
		// waiting on its writes: the fill would take hours.
		fmt.Sprintf("--scheduler-workers=%d", memSchedulerWorkers),
	}
	// As in BenchmarkPropagationLatency: further flags, for A/B runs or
	// --profiler-address.
	args = append(args, strings.Fields(os.Getenv("FLOTILLA_BENCH_MANAGER_ARGS"))...)
	fmt.Fprintf(m.logFile, "# %s %s\n", binary, strings.Join(args, " "))
	m.cmd = exec.Command(binary, args...)
	m.cmd.Stdout, m.cmd.Stderr = m.logFile, m.logFile
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		_ = m.logFile.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	go func() {
		err := m.cmd.Wait()
		m.mu.Lock()
		m.end = fmt.Sprint("exit: ", err)
		m.mu.Unlock()
		close(m.done)
	}()
	return m, nil
}

func (m *benchManager) pid() int { return m.cmd.Process.Pid }

// describe is the manager's memory and its main work queues' depths, for
// progress lines and failures.
func (m *benchManager) describe() string {
	out := "RSS ?"
	if p, err := procStatus(m.pid()); err == nil {
		out = fmt.Sprintf("RSS %.0f MB (peak %.0f MB)", p["VmRSS"]/(1<<20), p["VmHWM"]/(1<<20))
	}
	metrics, err := scrapeMetrics(m.metricsURL)
	if err != nil {
		return out
	}
	out += fmt.Sprintf(", heap in use %.0f MB", metrics["go_memstats_heap_inuse_bytes"]/(1<<20))
	var queues []string
	for _, q := range []string{"detector", "scheduling-resourcebinding", "works-resourcebinding", "status-resourcebinding", "enrolment"} {
		queues = append(queues, fmt.Sprintf("%s %.0f", q, metrics[`workqueue_depth{controller="`+q+`",name="`+q+`",priority="0"}`]))
	}
	return out + "; queues: " + strings.Join(queues, ", ")
}

// exited says how the manager ended; empty while it runs.
func (m *benchManager) exited() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.end
}

// stop sends SIGTERM to the manager's process group, SIGKILL after 15 s.
func (m *benchManager) stop() {
	_ = syscall.Kill(-m.pid(), syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-m.pid(), syscall.SIGKILL)
		<-m.done
	}
	_ = m.logFile.Close()
}

func (m *benchManager) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if exited := m.exited(); exited != "" {
			return fmt.Errorf("flotilla-manager exited while starting: %s\n%s", exited, m.logTail(20))
		}
		if resp, err := http.Get(m.healthURL); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("flotilla-manager not ready at %s after %s; log %s", m.healthURL, timeout, m.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logTail is the last n lines of the manager's log.
func (m *benchManager) logTail(n int) string {
	data, _ := os.ReadFile(m.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var klogError = regexp.MustCompile(`^E\d{4} `)

// logErrors counts klog error lines of the manager and returns the first n.
func (m *benchManager) logErrors(n int) (int, string) {
	f, err := os.Open(m.logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	count, first := 0, []string{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if klogError.MatchString(s.Text()) {
			count++
			if len(first) < n {
				first = append(first, s.Text())
			}
		}
	}
	return count, strings.Join(first, "\n")
}

func memServingCert(dir string) error {
	crt, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// enrolPullMember writes a CAPI Cluster as Cluster API leaves it once its
// control plane is up (kubeconfig Secret, control plane initialised and
// available), annotated for Pull mode, and waits for the manager's
// enrolment to make it an Enrolled member. The kubeconfig points nowhere:
// in Pull mode the hub never connects to the member.
func enrolPullMember(ctx context.Context, c client.Client, name string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: memClusterNS}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: %[1]s, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: admin, user: {token: unused}}]\ncontexts: [{name: %[1]s, context: {cluster: %[1]s, user: admin}}]\ncurrent-context: %[1]s\n", name)
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: memClusterNS, Name: name + "-kubeconfig", Labels: map[string]string{capiv1.ClusterNameLabel: name}},
		Type:       capiv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte(kubeconfig)},
	}); err != nil {
		return fmt.Errorf("kubeconfig Secret of Cluster %s: %w", name, err)
	}
	cluster := &capiv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: memClusterNS, Name: name,
			Labels:      map[string]string{clusterv1alpha1.EnrolLabel: "true"},
			Annotations: map[string]string{clusterv1alpha1.SyncModeAnnotation: string(clusterv1alpha1.Pull)}},
		Spec: capiv1.ClusterSpec{
			ControlPlaneEndpoint: capiv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
			ControlPlaneRef:      capiv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: name},
			InfrastructureRef:    capiv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: name},
		},
	}
	if err := c.Create(ctx, cluster); err != nil {
		return fmt.Errorf("Cluster %s: %w", name, err)
	}
	// Enrolment adds its finalizer meanwhile: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return err
		}
		now := metav1.Now()
		cluster.Status.Initialization = capiv1.ClusterInitializationStatus{InfrastructureProvisioned: ptr.To(true), ControlPlaneInitialized: ptr.To(true)}
		cluster.Status.Conditions = []metav1.Condition{
			{Type: capiv1.ClusterRemoteConnectionProbeCondition, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", LastTransitionTime: now},
			{Type: capiv1.ClusterControlPlaneAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: now},
		}
		return c.Status().Update(ctx, cluster)
	})
	if err != nil {
		return fmt.Errorf("status of Cluster %s: %w", name, err)
	}
	return memPoll(ctx, time.Minute, func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
			return fmt.Errorf("member %s not enrolled: %w", name, err)
		}
		if !conditions.IsTrue(m, clusterv1alpha1.ConditionEnrolled) {
			return fmt.Errorf("member %s not enrolled: %+v", name, conditions.Get(m, clusterv1alpha1.ConditionEnrolled))
		}
		if m.Spec.SyncMode != clusterv1alpha1.Pull {
			return fmt.Errorf("member %s is in %s mode, want Pull", name, m.Spec.SyncMode)
		}
		return nil
	})
}

// agentStatus is what an agent reports of its member, taken from the hub's
// own apiserver (the same Kubernetes): version and the built-in APIs, and a
// capacity model of 500 nodes of 32 CPU, 128 GiB and 110 Pods free — room
// for the 30,000 replicas each member is given, however long the
// scheduler's assumed-capacity ledger holds them.
func agentStatus(d discovery.DiscoveryInterface) (clusterv1alpha1.MemberClusterStatus, error) {
	st := clusterv1alpha1.MemberClusterStatus{}
	version, err := d.ServerVersion()
	if err != nil {
		return st, err
	}
	st.KubernetesVersion = version.GitVersion
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil {
		return st, fmt.Errorf("discovery: %w", err)
	}
	var builtIn []*metav1.APIResourceList
	for _, l := range lists {
		group := strings.Split(l.GroupVersion, "/")[0]
		if !strings.Contains(l.GroupVersion, "/") || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io") && !strings.HasSuffix(group, ".x-k8s.io") {
			builtIn = append(builtIn, l)
		}
	}
	st.APIEnablements = memberstatus.APIEnablements(builtIn)
	const nodes = 500
	perNode := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110")}
	total := corev1.ResourceList{}
	for k, v := range perNode {
		q := v.DeepCopy()
		q.Mul(nodes)
		total[k] = q
	}
	data := map[string]any{
		clusterv1alpha1.CapacityModelKey: clusterv1alpha1.CapacityModel{
			ObservedTime: metav1.Now(),
			NodeGroups:   []clusterv1alpha1.NodeGroup{{Count: nodes, Free: perNode}},
		},
		clusterv1alpha1.NodeSummaryKey:     clusterv1alpha1.NodeSummary{TotalNum: nodes, ReadyNum: nodes},
		clusterv1alpha1.ResourceSummaryKey: clusterv1alpha1.ResourceSummary{Allocatable: total},
	}
	cm := map[string]string{}
	for k, v := range data {
		raw, err := json.Marshal(v)
		if err != nil {
			return st, err
		}
		cm[k] = string(raw)
	}
	// As the agent reads the estimator's ConfigMap.
	if err := memberstatus.SetCapacity(&st, cm); err != nil {
		return st, err
	}
	return st, nil
}

// playAgent does on the hub what a member's flotilla-agent does there but
// pulling Works: it renews the agent's Lease in the member's execution
// namespace (with the agent's own Renewer and timings), writes the member's
// status once and refreshes lastHeartbeatTime every 30 s, as the agent's
// default heartbeat.
func playAgent(ctx context.Context, c client.Client, name string, st clusterv1alpha1.MemberClusterStatus) error {
	renewer := &lease.Renewer{
		Client: c, Key: client.ObjectKey{Namespace: clusterv1alpha1.AgentLeaseNamespace(name), Name: clusterv1alpha1.AgentLeaseName},
		Holder: "flotilla-agent-" + name + "-bench", Duration: clusterv1alpha1.AgentLeaseDurationSeconds * time.Second,
		Interval: clusterv1alpha1.AgentLeaseRenewInterval,
	}
	if err := renewer.Renew(ctx); err != nil {
		return err
	}
	go func() { _ = renewer.Start(ctx) }()
	report := func(full bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m := &clusterv1alpha1.MemberCluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
				return err
			}
			before := m.DeepCopy()
			if full {
				m.Status.KubernetesVersion = st.KubernetesVersion
				m.Status.APIEnablements = st.APIEnablements
				m.Status.CapacityModel, m.Status.NodeSummary, m.Status.ResourceSummary = st.CapacityModel, st.NodeSummary, st.ResourceSummary
			}
			m.Status.LastHeartbeatTime = ptr.To(metav1.Now())
			return c.Status().Patch(ctx, m, client.MergeFrom(before))
		})
	}
	if err := report(true); err != nil {
		return fmt.Errorf("status of member %s: %w", name, err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(30 * time.Second):
				_ = report(false)
			}
		}
	}()
	return nil
}

// waitMembersSchedulable waits for every member to be Ready, untainted and
// to carry a capacity model.
func waitMembersSchedulable(ctx context.Context, c client.Client, mgr *benchManager, timeout time.Duration) error {
	return memPoll(ctx, timeout, func() error {
		if exited := mgr.exited(); exited != "" {
			return fmt.Errorf("flotilla-manager exited: %s", exited)
		}
		for _, name := range memMembers {
			m := &clusterv1alpha1.MemberCluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
				return err
			}
			switch {
			case !conditions.IsTrue(m, clusterv1alpha1.ConditionReady):
				return fmt.Errorf("member %s not Ready: %+v", name, conditions.Get(m, clusterv1alpha1.ConditionReady))
			case len(m.Spec.Taints) > 0:
				return fmt.Errorf("member %s tainted: %v", name, m.Spec.Taints)
			case m.Status.CapacityModel == nil:
				return fmt.Errorf("member %s has no capacity model", name)
			}
		}
		return nil
	})
}

// memPoll calls f every 500 ms until it returns nil; past the timeout it
// returns f's last error.
func memPoll(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// duplicatedPolicy is a federated namespace with a policy that gives every
// Deployment, all its replicas, to each of the three members.
func duplicatedPolicy(ns string) string {
	return federatedNamespace(ns, "{replicaSchedulingType: Duplicated}")
}

func memCreateYAML(ctx context.Context, c client.Client, manifests string) error {
	for _, doc := range strings.Split(manifests, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return err
		}
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// createTemplates creates the Deployments with memCreators goroutines.
func createTemplates(ctx context.Context, c client.Client) error {
	jobs := make(chan *appsv1.Deployment)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range memCreators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range jobs {
				if failed.Load() != nil {
					continue
				}
				err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !errors.Is(err, context.Canceled) }, func() error {
					return client.IgnoreAlreadyExists(c.Create(ctx, d.DeepCopy()))
				})
				if err != nil {
					err = fmt.Errorf("create Deployment %s/%s: %w", d.Namespace, d.Name, err)
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for i := range memPerNamespace {
		for n := range memNamespaces {
			jobs <- benchDeployment(fmt.Sprintf("mem-%02d", n), fmt.Sprintf("web-%04d", i))
		}
	}
	close(jobs)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// benchDeployment is a small but realistic template: 3 replicas, a few
// labels, one container with requests, limits and a port.
func benchDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop", "tier": "frontend"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.example/shop/web:1.4.2",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
					},
				}}},
			},
		},
	}
}

// fillCounts is what the hub holds.
type fillCounts struct{ bindings, placed, works int }

// waitFilled polls every 10 s until the hub holds the bindings, all placed
// on the three members, and the Works; it prints progress and the
// manager's RSS as it goes.
func waitFilled(ctx context.Context, c client.Client, mgr *benchManager, start time.Time, wantBindings, wantWorks int) (fillCounts, error) {
	timeout := memFillTimeout
	if v := os.Getenv("FLOTILLA_MEMBENCH_FILL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fillCounts{}, fmt.Errorf("FLOTILLA_MEMBENCH_FILL_TIMEOUT: %w", err)
		}
		timeout = d
	}
	deadline := time.Now().Add(timeout)
	var counts fillCounts
	for {
		if exited := mgr.exited(); exited != "" {
			return counts, fmt.Errorf("flotilla-manager exited during the fill: %s\n%s", exited, mgr.logTail(20))
		}
		var err error
		counts.bindings, err = countMetadata(ctx, c, workv1alpha1.GroupVersion.WithKind("ResourceBindingList"))
		if err == nil {
			counts.works, err = countMetadata(ctx, c, workv1alpha1.GroupVersion.WithKind("WorkList"))
		}
		if err == nil && counts.bindings >= wantBindings && counts.works >= wantWorks {
			counts.placed, err = countPlaced(ctx, c)
			if err == nil && counts.placed >= wantBindings {
				fmt.Fprintf(os.Stderr, "memory bench: %s: %d bindings, %d placed, %d Works: filled\n", time.Since(start).Round(time.Second), counts.bindings, counts.placed, counts.works)
				return counts, nil
			}
		}
		state := mgr.describe()
		fmt.Fprintf(os.Stderr, "memory bench: %s: %d bindings, %d Works; manager %s%s\n", time.Since(start).Round(time.Second), counts.bindings, counts.works, state, memErrSuffix(err))
		if time.Now().After(deadline) {
			if counts.placed, err = countPlaced(ctx, c); err != nil {
				counts.placed = -1
			}
			return counts, fmt.Errorf("after %s the hub holds %d of %d ResourceBindings (%d placed on 3 members) and %d of %d Works; manager then: %s",
				timeout, counts.bindings, wantBindings, counts.placed, counts.works, wantWorks, state)
		}
		select {
		case <-ctx.Done():
			return counts, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
}

func memErrSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

// countMetadata counts objects of a kind with metadata-only pages.
func countMetadata(ctx context.Context, c client.Client, listGVK schema.GroupVersionKind) (int, error) {
	n, cont := 0, ""
	for {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(listGVK)
		if err := c.List(ctx, l, client.Limit(5000), client.Continue(cont)); err != nil {
			return n, fmt.Errorf("list %s: %w", listGVK.Kind, err)
		}
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n, nil
		}
	}
}

// countPlaced counts bindings scheduled on all three members.
func countPlaced(ctx context.Context, c client.Client) (int, error) {
	n, cont := 0, ""
	for {
		l := &workv1alpha1.ResourceBindingList{}
		if err := c.List(ctx, l, client.Limit(1000), client.Continue(cont)); err != nil {
			return n, fmt.Errorf("list ResourceBindings: %w", err)
		}
		for i := range l.Items {
			rb := &l.Items[i]
			if len(rb.Spec.Clusters) == len(memMembers) && conditions.IsTrue(rb, workv1alpha1.ConditionScheduled) {
				n++
			}
		}
		if cont = l.Continue; cont == "" {
			return n, nil
		}
	}
}

// procStatus reads the byte sizes (Vm*, Rss*) of /proc/<pid>/status.
func procStatus(pid int) (map[string]float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, ":")
		fields := strings.Fields(value)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err == nil {
			out[key] = kb * 1024
		}
	}
	if out["VmHWM"] == 0 || out["VmRSS"] == 0 {
		return nil, fmt.Errorf("/proc/%d/status has no VmHWM or VmRSS", pid)
	}
	return out, nil
}

// scrapeMetrics reads the Go runtime gauges and the work queue depths of
// the manager's metrics endpoint, keyed by series (with its labels).
func scrapeMetrics(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	s := bufio.NewScanner(bytes.NewReader(body))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 2 || !(strings.HasPrefix(fields[0], "go_memstats_") || fields[0] == "go_goroutines" || strings.HasPrefix(fields[0], "workqueue_depth{")) {
			continue
		}
		if v, err := strconv.ParseFloat(fields[1], 64); err == nil {
			out[fields[0]] = v
		}
	}
	if _, ok := out["go_memstats_heap_inuse_bytes"]; !ok {
		return nil, fmt.Errorf("%s has no go_memstats_heap_inuse_bytes", url)
	}
	return out, nil
}
