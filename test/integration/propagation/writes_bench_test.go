package propagation_test

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/pacing"
)

// burstTemplates is how many Deployments BenchmarkHubWritesInABurst applies
// at once.
const burstTemplates = 50

// progress paces the suite's status writes that only move progress, at the
// binaries' default; BenchmarkHubWritesOfARollout changes it.
var progress = &pacing.Reports{Interval: pacing.DefaultProgressInterval}

// BenchmarkHubWritesInABurst counts what the pipeline asks of the hub's API
// server for a burst: 50 Deployment templates applied one after another,
// each placed on both members as soon as its binding exists, then every
// copy reported Ready in its member. From the first template to every
// binding showing both members Ready (and 2 s more, for late writes), it
// reads the hub apiserver's own request counters and reports, per
// binding, the writes of bindings' status, of bindings themselves (spec,
// metadata) and of Works' status, the binding status writes refused for
// a conflict (counted among the writes), and the reads of the templates
// from the API server (the hub does not cache them). The hub's API server is the one
// place every controller's writes meet: what it counts is what a burst
// costs.
func BenchmarkHubWritesInABurst(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ns := deploymentsNamespace(b, "burst", i)
		before, err := hubWrites()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for j := 0; j < burstTemplates; j++ {
			createYAML(b, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%d, namespace: %s}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web:1}]
`, j, ns))
		}
		bindings := make([]*workv1alpha1.ResourceBinding, burstTemplates)
		for j := range bindings {
			bindings[j] = bindAndSchedule(b, ns, fmt.Sprintf("web-%d", j), "Deployment", placement(member1, 1, member2, 1))
		}
		for j, rb := range bindings {
			eventually(b, "both copies of "+rb.Name+" applied", func() error { return appliedOn(rb, 2) })
			for _, m := range []string{member1, member2} {
				reportReady(b, m, ns, fmt.Sprintf("web-%d", j), 1)
			}
		}
		for _, rb := range bindings {
			eventually(b, rb.Name+" Ready on the hub", func() error {
				if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
					return err
				}
				if rb.Status.ReadyReplicas != 2 {
					return fmt.Errorf("ready replicas %d", rb.Status.ReadyReplicas)
				}
				return nil
			})
		}
		took := time.Since(start)
		time.Sleep(2 * time.Second)
		after, err := hubWrites()
		if err != nil {
			b.Fatal(err)
		}
		per := func(key string) float64 { return (after[key] - before[key]) / burstTemplates }
		b.ReportMetric(per("resourcebindings/status"), "binding-status-writes/binding")
		b.ReportMetric(per("resourcebindings"), "binding-writes/binding")
		b.ReportMetric(per("resourcebindings/status#conflict"), "binding-status-conflicts/binding")
		b.ReportMetric(per("works/status"), "work-status-writes/binding")
		b.ReportMetric(per("works"), "work-writes/binding")
		b.ReportMetric(per("deployments#get"), "template-reads/binding")
		b.ReportMetric(took.Seconds(), "s-to-all-ready")
	}
}

// BenchmarkHubWritesOfARollout counts the hub's status writes while
// members roll out: 20 Deployments of 20 replicas, 10 on each member,
// applied and then reported ready a replica at a time in both members, a
// step every 50 ms (a rollout on a member with room and fast image pulls),
// with status progress paced at 0 (every change written) and at the
// default interval. Writes per binding, from the hub apiserver's counters.
func BenchmarkHubWritesOfARollout(b *testing.B) {
	const templates, perMember = 20, 10
	defer progress.SetInterval(pacing.DefaultProgressInterval)
	for _, interval := range []time.Duration{0, pacing.DefaultProgressInterval} {
		b.Run("progress-interval="+interval.String(), func(b *testing.B) {
			progress.SetInterval(interval)
			for i := 0; i < b.N; i++ {
				ns := deploymentsNamespace(b, "rollout", i)
				bindings := make([]*workv1alpha1.ResourceBinding, templates)
				for j := range bindings {
					createYAML(b, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%d, namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web:1}]
`, j, ns, 2*perMember))
					bindings[j] = bindAndSchedule(b, ns, fmt.Sprintf("web-%d", j), "Deployment", placement(member1, perMember, member2, perMember))
				}
				for _, rb := range bindings {
					eventually(b, "both copies of "+rb.Name+" applied", func() error { return appliedOn(rb, 2) })
				}
				time.Sleep(2 * time.Second) // the applies' own writes done
				before, err := hubWrites()
				if err != nil {
					b.Fatal(err)
				}
				for ready := int32(1); ready <= perMember; ready++ {
					// Every copy's step at once, as members' controllers
					// report in parallel.
					var wg sync.WaitGroup
					errs := make(chan error, 2*templates)
					for j := range bindings {
						for _, m := range []string{member1, member2} {
							wg.Go(func() {
								d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", j)}}
								if err := inMember(m, d); err != nil {
									errs <- err
									return
								}
								d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: ready, ReadyReplicas: ready,
									AvailableReplicas: ready, UpdatedReplicas: ready}
								if err := members[m].Status().Update(ctx(), d); err != nil {
									errs <- fmt.Errorf("report %s ready in %s: %w", d.Name, m, err)
								}
							})
						}
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						b.Fatal(err)
					}
					time.Sleep(50 * time.Millisecond)
				}
				for _, rb := range bindings {
					eventually(b, rb.Name+" Ready on the hub", func() error {
						if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
							return err
						}
						if rb.Status.ReadyReplicas != 2*perMember {
							return fmt.Errorf("ready replicas %d", rb.Status.ReadyReplicas)
						}
						return nil
					})
				}
				time.Sleep(2 * time.Second)
				after, err := hubWrites()
				if err != nil {
					b.Fatal(err)
				}
				per := func(key string) float64 { return (after[key] - before[key]) / templates }
				b.ReportMetric(per("works/status"), "work-status-writes/binding")
				b.ReportMetric(per("resourcebindings/status"), "binding-status-writes/binding")
			}
		})
	}
}

// deploymentsNamespace makes a new federated namespace whose Deployments a
// PropagationPolicy selects, and returns its name.
func deploymentsNamespace(b *testing.B, prefix string, i int) string {
	ns := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%100000, i)
	namespace(b, ns, true)
	createYAML(b, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: `+ns+`}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
`)
	return ns
}

// appliedOn reports whether n members have applied the binding's Works.
func appliedOn(rb *workv1alpha1.ResourceBinding, n int) error {
	if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
		return err
	}
	applied := 0
	for _, item := range rb.Status.AggregatedStatus {
		if item.Applied {
			applied++
		}
	}
	if applied < n {
		return fmt.Errorf("applied on %d of %d members", applied, n)
	}
	return nil
}

// hubWrites reads the hub apiserver's apiserver_request_total and sums the
// writes (PATCH, PUT, POST, APPLY) of Flotilla's work group by resource and
// subresource, e.g. "resourcebindings/status", and those refused for a
// conflict ("resourcebindings/status#conflict"), which are among them.
func hubWrites() (map[string]float64, error) {
	httpClient, err := rest.HTTPClientFor(hub.Config)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Get(strings.TrimSuffix(hub.Config.Host, "/") + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("hub /metrics: %s: %s", resp.Status, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		templateRead := strings.Contains(line, `group="apps"`) && strings.Contains(line, `resource="deployments"`) &&
			strings.Contains(line, `verb="GET"`) && strings.Contains(line, `subresource=""`)
		if !templateRead && !strings.Contains(line, `group="work.flotilla.io"`) {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		if templateRead {
			// The templates are the benchmark's Deployments; only the
			// pipeline reads them.
			if n, err := strconv.ParseFloat(value, 64); err == nil {
				out["deployments#get"] += n
			}
			continue
		}
		switch l["verb"] {
		case "PATCH", "PUT", "POST", "UPDATE", "CREATE", "APPLY":
		default:
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += n
		if l["code"] == "409" {
			out[key+"#conflict"] += n
		}
	}
	return out, sc.Err()
}
