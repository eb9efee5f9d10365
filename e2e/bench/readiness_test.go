package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// readiness records, from watches rather than polls (a poll of 100
// Deployments in 3 members and 100 bindings takes hundreds of milliseconds
// on 2 loaded cores, and would be the measure's resolution), when each
// workload of a namespace was first seen Ready at each stage: its part in
// each member, the member's Work on the hub (Available), and its binding
// on the hub (fully applied, every replica Ready).
type readiness struct {
	ns string

	mu     sync.Mutex
	member map[string]map[string]time.Time // workload → member → Deployment Ready there
	work   map[string]map[string]time.Time // workload → member → its Work Available on the hub
	hub    map[string]time.Time            // workload → binding Ready
	placed map[string][]string             // workload → members with replicas, from the binding
}

// watchReadiness starts the watches; they stop with ctx.
func watchReadiness(ctx context.Context, f *fleet.Fleet, ns string) (*readiness, error) {
	r := &readiness{ns: ns, member: map[string]map[string]time.Time{}, work: map[string]map[string]time.Time{},
		hub: map[string]time.Time{}, placed: map[string][]string{}}
	for _, m := range f.Members() {
		c, err := client.NewWithWatch(m.RESTConfig(), client.Options{Scheme: m.Client.Scheme()})
		if err != nil {
			return nil, err
		}
		name := m.Spec.Name
		go follow(ctx, c, &appsv1.DeploymentList{}, []client.ListOption{client.InNamespace(ns)}, func(o runtime.Object, at time.Time) {
			if d, ok := o.(*appsv1.Deployment); ok && d.Spec.Replicas != nil && d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == *d.Spec.Replicas {
				r.first(r.member, d.Name, name, at)
			}
		})
	}
	hub, err := client.NewWithWatch(f.Hub.RESTConfig(), client.Options{Scheme: f.Hub.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	go follow(ctx, hub, &workv1alpha1.WorkList{}, nil, func(o runtime.Object, at time.Time) {
		w, ok := o.(*workv1alpha1.Work)
		member, inExecution := strings.CutPrefix(w.GetNamespace(), clusterv1alpha1.ExecutionNamespacePrefix)
		if !ok || !inExecution || !conditions.IsTrue(w, workv1alpha1.WorkAvailable) {
			return
		}
		for _, s := range w.Status.ManifestStatuses {
			if s.Identifier.Kind == "Deployment" && s.Identifier.Namespace == ns {
				r.first(r.work, s.Identifier.Name, member, at)
			}
		}
	})
	go follow(ctx, hub, &workv1alpha1.ResourceBindingList{}, []client.ListOption{client.InNamespace(ns)}, func(o runtime.Object, at time.Time) {
		rb, ok := o.(*workv1alpha1.ResourceBinding)
		if !ok || rb.Spec.Resource.Kind != "Deployment" || rb.Spec.Replicas == 0 ||
			!conditions.IsTrue(rb, workv1alpha1.ConditionFullyApplied) || rb.Status.ReadyReplicas != rb.Spec.Replicas {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, seen := r.hub[rb.Spec.Resource.Name]; seen {
			return
		}
		r.hub[rb.Spec.Resource.Name] = at
		var placed []string
		for _, c := range rb.Spec.Clusters {
			if c.Replicas > 0 {
				placed = append(placed, c.Name)
			}
		}
		r.placed[rb.Spec.Resource.Name] = placed
	})
	return r, nil
}

// follow watches list's kind, calling seen with each object and when its
// event arrived, and watches again when the server ends the watch.
func follow(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, seen func(runtime.Object, time.Time)) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, opts...)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		for e := range w.ResultChan() {
			if e.Type == watch.Added || e.Type == watch.Modified {
				seen(e.Object, time.Now())
			}
		}
		w.Stop()
	}
}

func (r *readiness) first(at map[string]map[string]time.Time, workload, member string, when time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at[workload] == nil {
		at[workload] = map[string]time.Time{}
	}
	if _, seen := at[workload][member]; !seen {
		at[workload][member] = when
	}
}

// done is how many workloads the hub shows Ready.
func (r *readiness) done() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hub)
}

// stageLags are, per workload the hub shows Ready, the lags between the
// stages after its last member was Ready: member → its Work on the hub,
// that Work → the binding, and member → binding in all. A stage whose
// event was not seen (a watch restarted past it) counts as the next one.
type stageLags struct {
	memberToWork, workToBinding, memberToBinding []time.Duration
}

func (r *readiness) lags() stageLags {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out stageLags
	for name, bound := range r.hub {
		var lastMember, lastWork time.Time
		for _, m := range r.placed[name] {
			mt, ok := r.member[name][m]
			if !ok {
				mt = bound
			}
			wt, ok := r.work[name][m]
			if !ok {
				wt = bound
			}
			if mt.After(lastMember) {
				lastMember = mt
			}
			if wt.After(lastWork) {
				lastWork = wt
			}
		}
		if lastWork.Before(lastMember) {
			// The Work of the last member was Available before its
			// Deployment was seen Ready in the member: the watches of the
			// two apiservers arrive in their own time.
			lastWork = lastMember
		}
		out.memberToWork = append(out.memberToWork, lastWork.Sub(lastMember))
		out.workToBinding = append(out.workToBinding, bound.Sub(lastWork))
		out.memberToBinding = append(out.memberToBinding, bound.Sub(lastMember))
	}
	return out
}

// quantileMs is the q-quantile of d in milliseconds.
func quantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(q*float64(len(s)-1))].Milliseconds())
}

// hubRequestTimes reads, from the hub apiserver's metrics, the count and
// mean duration of its write requests to the status of bindings and Works,
// then its costliest writes of any kind.
func hubRequestTimes(ctx context.Context, f *fleet.Fleet) (string, error) {
	families, err := scrapeFamilies(ctx, strings.TrimSuffix(f.Hub.Server(), "/")+"/metrics", f.Hub.RESTConfig().BearerToken)
	if err != nil {
		return "", err
	}
	times := writeTimes(families)
	// Of which refused for their optimistic lock.
	refused := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		l := labels(m)
		if l["subresource"] == "status" && l["code"] == "409" {
			refused[l["verb"]+" "+l["resource"]+"/status"] += m.GetCounter().GetValue()
		}
	}
	var out []string
	for _, verb := range []string{"APPLY", "PATCH", "UPDATE"} {
		for _, resource := range []string{"resourcebindings", "works"} {
			k := verb + " " + resource + "/status"
			if t, ok := times[k]; ok {
				out = append(out, fmt.Sprintf("%s: %d (%.0f refused, 409), mean %.0f ms", k, t.n, refused[k], 1000*t.sum/float64(t.n)))
			}
		}
	}
	keys := make([]string, 0, len(times))
	for k := range times {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return times[keys[i]].sum > times[keys[j]].sum })
	var costliest []string
	for _, k := range keys[:min(len(keys), 12)] {
		costliest = append(costliest, fmt.Sprintf("%s: %d, %.0f ms each, %.1f s", k, times[k].n, 1000*times[k].sum/float64(times[k].n), times[k].sum))
	}
	return "hub " + strings.Join(out, "; ") +
		"\n  hub writes since it started, most costly first: " + strings.Join(costliest, "; "), nil
}

// requestTotal is a series' request count and the sum of their durations.
type requestTotal struct {
	n   uint64
	sum float64
}

// writeTimes totals the hub apiserver's write requests since it started by
// "VERB resource[/subresource]".
func writeTimes(families map[string]*dto.MetricFamily) map[string]*requestTotal {
	times := map[string]*requestTotal{}
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		l := labels(m)
		switch l["verb"] {
		case "APPLY", "PATCH", "UPDATE", "POST", "DELETE":
		default:
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if times[key] == nil {
			times[key] = &requestTotal{}
		}
		times[key].n += m.GetHistogram().GetSampleCount()
		times[key].sum += m.GetHistogram().GetSampleSum()
	}
	return times
}

func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// scrapeFamilies GETs a Prometheus endpoint with a bearer token.
func scrapeFamilies(ctx context.Context, url, token string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// Both endpoints are served on loopback with certificates of the fleet's own.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback scrape
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// controllerTimes reads, from the manager's metrics endpoint, each named
// controller's reconciles, their mean wait in the work queue and their mean
// duration: where a burst's lag goes.
func controllerTimes(ctx context.Context, f *fleet.Fleet, names ...string) (string, error) {
	families, err := scrapeFamilies(ctx, f.Hub.MetricsURL(), f.Hub.RESTConfig().BearerToken)
	if err != nil {
		return "", err
	}
	histogram := func(family, label, value string) (count uint64, sum float64) {
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					count += m.GetHistogram().GetSampleCount()
					sum += m.GetHistogram().GetSampleSum()
				}
			}
		}
		return count, sum
	}
	var out []string
	for _, name := range names {
		n, reconcile := histogram("controller_runtime_reconcile_time_seconds", "controller", name)
		waits, queued := histogram("workqueue_queue_duration_seconds", "name", name)
		if n == 0 || waits == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %d reconciles, mean wait in queue %.0f ms, mean reconcile %.0f ms",
			name, n, 1000*queued/float64(waits), 1000*reconcile/float64(n)))
	}
	return strings.Join(out, "; "), nil
}
