package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkHubApply applies 100 Deployment templates, one after the other
// as `kubectl apply` of a directory does, to a federated namespace of the
// local fleet's hub (real kube-controller-manager, Flotilla's webhooks and
// controllers running) and the same 100 to a plain kube-apiserver with its
// etcd and nothing else (what Karmada's apiserver is to its templates),
// started on the same machine at the same time. It reports both times and
// their ratio, and what the templates cost the hub afterwards: ReplicaSets
// its kube-controller-manager stored for them and the ReplicaSet and Pod
// creations it asked for, with the CPU every process of the machine used
// during each apply and the hub apiserver's requests. Before, with the
// fleet idle, it applies the same templates to a federated namespace no
// policy selects and to the plain apiserver: what the hub costs by itself,
// without the pipeline's reaction.
func BenchmarkHubApply(b *testing.B) {
	const workloads = 100
	ctx := context.Background()
	f := startFleet(ctx, b)
	defer f.Stop()
	plain, stop := startPlainAPIServer(b)
	defer stop()

	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("apply-%d", iter)
		if err := f.Apply(ctx, []byte(namespaceAndPolicy(ns))); err != nil {
			b.Fatal(err)
		}
		if err := plain.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		// First, with the fleet idle, what the hub costs by itself: the
		// same templates in a federated namespace no policy selects
		// (admission, the quota-warning webhook, the kube-controller-
		// manager's refused ReplicaSets; no binding, no Work), against
		// the plain apiserver's apply, also idle.
		idle := ns + "-unselected"
		if err := f.Apply(ctx, []byte(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {flotilla.io/federated: \"true\"}}\n", idle))); err != nil {
			b.Fatal(err)
		}
		if err := plain.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: idle}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		hubAlone := timeApply(ctx, b, f.Hub.Client, idle, workloads)
		bareIdle := timeApply(ctx, b, plain, idle, workloads)
		fmt.Fprintf(os.Stderr, "apply of %d Deployments no policy selects, the fleet idle: hub %s, plain apiserver %s (%.2f×)\n",
			workloads, hubAlone.Round(time.Millisecond), bareIdle.Round(time.Millisecond), hubAlone.Seconds()/bareIdle.Seconds())
		// The kube-controller-manager's first retries of those
		// templates' ReplicaSets pass before the measured apply.
		time.Sleep(5 * time.Second)

		before := hubAdmission(ctx, b, f)
		cpu := readCPU(b, f)
		b.StartTimer()
		b.ResetTimer()
		hubStart := time.Now()
		hub := timeApply(ctx, b, f.Hub.Client, ns, workloads)
		hubEnd := time.Now()
		b.StopTimer()
		hubCPU := readCPU(b, f).minus(cpu)
		applied := hubAdmission(ctx, b, f)
		during := applied.minus(before)
		b.StartTimer()
		bare := timeApply(ctx, b, plain, ns, workloads)
		b.StopTimer()
		bareCPU := readCPU(b, f).minus(hubCPU.end)

		// What the templates cost the hub once applied: give its
		// controllers 10 s to do what they do with them.
		time.Sleep(10 * time.Second)
		after := hubAdmission(ctx, b, f).minus(applied)
		rs := &appsv1.ReplicaSetList{}
		if err := f.Hub.Client.List(ctx, rs, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		// Every ReplicaSet or Pod creation the hub's apiserver served
		// during the apply and the 10 s after: its kube-controller-
		// manager's, for these templates and the unselected ones, each
		// refused by flotilla-inert-templates unless stored (rs).
		creates := 0.0
		for _, window := range []admission{during, after} {
			creates += window["request POST replicasets"][1] + window["request POST pods"][1]
		}
		b.ReportMetric(float64(hub.Milliseconds()), "hub-ms")
		b.ReportMetric(float64(bare.Milliseconds()), "plain-apiserver-ms")
		b.ReportMetric(hub.Seconds()/bare.Seconds(), "hub/plain")
		b.ReportMetric(hubAlone.Seconds()/bareIdle.Seconds(), "hub-unselected/plain-idle")
		// The measured apply against the plain apiserver's with the
		// machine idle: the plain apply just after the hub's runs while
		// the fleet reacts to the hub's templates, which this ratio does
		// not count in the hub's favour.
		b.ReportMetric(hub.Seconds()/bareIdle.Seconds(), "hub/plain-idle")
		b.ReportMetric(float64(len(rs.Items)), "hub-replicasets")
		b.ReportMetric(creates, "hub-rs-pod-creates")
		fmt.Fprintf(os.Stderr, "apply of %d Deployments: hub %s, plain apiserver %s (%.2f×; %.2f× its idle apply); on the hub 10 s later: %d ReplicaSets stored, %.0f ReplicaSet and Pod creations asked of its apiserver\n",
			workloads, hub.Round(time.Millisecond), bare.Round(time.Millisecond), hub.Seconds()/bare.Seconds(), hub.Seconds()/bareIdle.Seconds(), len(rs.Items), creates)
		tmpl := &appsv1.Deployment{}
		if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w000"}, tmpl); err != nil {
			b.Fatal(err)
		}
		for _, c := range tmpl.Status.Conditions {
			fmt.Fprintf(os.Stderr, "template w000 on the hub: %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		fmt.Fprintf(os.Stderr, "CPU during the hub's apply (%s):\n%s", hub.Round(time.Millisecond), hubCPU)
		fmt.Fprintf(os.Stderr, "CPU during the plain apiserver's apply (%s):\n%s", bare.Round(time.Millisecond), bareCPU)
		fmt.Fprintf(os.Stderr, "hub apiserver during the hub's apply:\n%s", during)
		fmt.Fprintf(os.Stderr, "hub apiserver in the 10 s after it:\n%s", after)
		fmt.Fprintf(os.Stderr, "hub writes during the hub's apply, by writer (audit log):\n%s", writesByWriter(b, f.Hub.AuditLog(), hubStart, hubEnd))
	}
}

// timeApply server-side applies the benchmark's Deployments one by one and
// returns how long that took.
func timeApply(ctx context.Context, b *testing.B, c client.Client, ns string, n int) time.Duration {
	start := time.Now()
	for i := range n {
		u := &unstructured.Unstructured{}
		doc := deployment(ns, fmt.Sprintf("w%03d", i))
		if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&u.Object); err != nil {
			b.Fatal(err)
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("bench"), client.ForceOwnership); err != nil {
			b.Fatalf("apply %s: %v", u.GetName(), err)
		}
	}
	return time.Since(start)
}

// startPlainAPIServer starts etcd and kube-apiserver from bin/ and nothing
// else, with a client as fast as the fleet's hub client.
func startPlainAPIServer(b *testing.B) (client.Client, func()) {
	b.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin")}
	cfg, err := env.Start()
	if err != nil {
		b.Fatalf("plain kube-apiserver: %v", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		_ = env.Stop()
		b.Fatal(err)
	}
	return c, func() { _ = env.Stop() }
}

// cpuReading is the CPU time each of the fleet's processes and the whole
// machine (/proc/stat, every process, the plain apiserver's among them)
// had used at one moment, or, after minus, within a window.
type cpuReading struct {
	at      time.Time
	machine time.Duration
	process map[string]time.Duration
	// end is the later reading of a window, to start the next one from.
	end *cpuReading
	// wall is the window's length.
	wall time.Duration
}

func readCPU(b *testing.B, f *fleet.Fleet) *cpuReading {
	b.Helper()
	process, err := f.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The first line sums every CPU: user nice system idle iowait irq
	// softirq steal guest guest_nice, in ticks of 100 Hz; busy is the
	// first eight but idle and iowait (guest time is counted in user
	// and nice already).
	fields := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])
	if len(fields) < 9 {
		b.Fatalf("/proc/stat: %q", fields)
	}
	busy := int64(0)
	for i, v := range fields[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %v", err)
		}
		busy += n
	}
	return &cpuReading{at: time.Now(), machine: time.Duration(busy) * 10 * time.Millisecond, process: process}
}

func (r *cpuReading) minus(earlier *cpuReading) *cpuReading {
	out := &cpuReading{at: earlier.at, machine: r.machine - earlier.machine, process: map[string]time.Duration{}, end: r, wall: r.at.Sub(earlier.at)}
	for k, v := range r.process {
		out.process[k] = v - earlier.process[k]
	}
	return out
}

// String lists the busiest processes first, in cores (CPU seconds per
// second of the window), and what the rest of the machine used.
func (r *cpuReading) String() string {
	keys := make([]string, 0, len(r.process))
	fleetTotal := time.Duration(0)
	for k, v := range r.process {
		keys = append(keys, k)
		fleetTotal += v
	}
	sort.Slice(keys, func(i, j int) bool { return r.process[keys[i]] > r.process[keys[j]] })
	cores := func(d time.Duration) float64 { return d.Seconds() / r.wall.Seconds() }
	var sb strings.Builder
	fmt.Fprintf(&sb, "  machine: %.2f cores busy; the fleet's processes %.2f, the rest (the plain apiserver and its etcd, the benchmark, the system) %.2f\n",
		cores(r.machine), cores(fleetTotal), cores(r.machine-fleetTotal))
	for _, k := range keys {
		if r.process[k] < r.wall/100 {
			break
		}
		fmt.Fprintf(&sb, "  %s: %.2f cores\n", k, cores(r.process[k]))
	}
	return sb.String()
}

// admission is what the hub apiserver's metrics say of requests: per
// series, the sum of seconds and the count.
type admission map[string][2]float64

func (a admission) minus(b admission) admission {
	out := admission{}
	for k, v := range a {
		d := [2]float64{v[0] - b[k][0], v[1] - b[k][1]}
		if d[1] > 0 {
			out[k] = d
		}
	}
	return out
}

func (a admission) String() string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %s: %.0f requests, %.1f ms each, %.2f s in all\n", k, a[k][1], 1000*a[k][0]/a[k][1], a[k][0])
	}
	return sb.String()
}

// hubAdmission reads the hub apiserver's request and webhook durations
// from its /metrics: requests by verb and resource, validating webhooks by
// name.
func hubAdmission(ctx context.Context, b *testing.B, f *fleet.Fleet) admission {
	cs, err := kubernetes.NewForConfig(f.Hub.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatalf("hub apiserver metrics: %v", err)
	}
	out := admission{}
	for _, line := range strings.Split(string(raw), "\n") {
		var series, key string
		switch {
		case strings.HasPrefix(line, "apiserver_admission_webhook_admission_duration_seconds_sum{"),
			strings.HasPrefix(line, "apiserver_admission_webhook_admission_duration_seconds_count{"):
			series, key = "webhook", label(line, "name")+" "+label(line, "operation")+" rejected="+label(line, "rejected")
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_sum{"),
			strings.HasPrefix(line, "apiserver_request_duration_seconds_count{"):
			series, key = "request", label(line, "verb")+" "+label(line, "resource")+" "+label(line, "subresource")
		default:
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		k := series + " " + strings.TrimSpace(key)
		cur := out[k]
		if strings.Contains(fields[0], "_sum{") {
			cur[0] += v
		} else {
			cur[1] += v
		}
		out[k] = cur
	}
	return out
}

// label is a label's value in a Prometheus text line.
func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

// writesByWriter counts the requests that write, received by an apiserver
// between from and to, from its audit log: by user, verb, resource and
// field manager (each phase of a binding writes as its own), most first.
func writesByWriter(b *testing.B, auditLog string, from, to time.Time) string {
	b.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	dec := json.NewDecoder(f)
	for {
		var e struct {
			Verb       string    `json:"verb"`
			RequestURI string    `json:"requestURI"`
			Received   time.Time `json:"requestReceivedTimestamp"`
			User       struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
		}
		if err := dec.Decode(&e); err != nil {
			break
		}
		if e.Received.Before(from) || e.Received.After(to) || e.Verb == "get" || e.Verb == "list" || e.Verb == "watch" {
			continue
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		manager := ""
		if u, err := url.Parse(e.RequestURI); err == nil {
			manager = u.Query().Get("fieldManager")
		}
		counts[fmt.Sprintf("%-8s %-28s %-22s %s", e.Verb, resource, manager, e.User.Username)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "  %4d %s\n", counts[k], k)
	}
	return out.String()
}
