package health

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func machine(name string, nodeHealthy, ready, hc metav1.ConditionStatus) Machine {
	return Machine{Name: name, NodeHealthy: nodeHealthy, Ready: ready, HealthCheckSucceeded: hc}
}

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

func byType(cs []metav1.Condition, typ string) metav1.Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func TestWorkersAvailable(t *testing.T) {
	healthy := func(n string) Machine { return machine(n, T, T, "") }
	tests := []struct {
		name      string
		machines  []Machine
		threshold float64
		status    metav1.ConditionStatus
		reason    string
		message   string
	}{{
		name: "no worker Machines: True, nothing to count", machines: []Machine{{Name: "cp", ControlPlane: true, NodeHealthy: F}},
		status: T, reason: "NoWorkers", message: "the Cluster has no worker Machines",
	}, {
		name: "all healthy", machines: []Machine{healthy("a"), healthy("b")},
		status: T, reason: "WorkersAvailable", message: "2 of 2 worker Machines healthy, 1 needed (50%)",
	}, {
		name: "exactly the threshold is enough", machines: []Machine{healthy("a"), machine("b", F, F, "")},
		status: T, reason: "WorkersAvailable", message: "1 of 2 worker Machines healthy, 1 needed (50%); unhealthy: b",
	}, {
		name: "below the threshold: degraded", machines: []Machine{healthy("a"), machine("b", F, F, ""), machine("c", F, "", "")},
		status: F, reason: "WorkersDegraded", message: "1 of 3 worker Machines healthy, 2 needed (50%); unhealthy: b, c",
	}, {
		name: "a failed MachineHealthCheck makes a Machine unhealthy", machines: []Machine{machine("a", T, T, F), healthy("b"), healthy("c")}, threshold: 1,
		status: F, reason: "WorkersDegraded", message: "2 of 3 worker Machines healthy, 3 needed (100%); unhealthy: a",
	}, {
		name: "unknown health decides: Unknown, not False", machines: []Machine{machine("a", U, U, ""), machine("b", U, "", ""), healthy("c")},
		status: U, reason: "WorkersAvailabilityUnknown", message: "1 of 3 worker Machines healthy, 2 needed (50%); 2 report no health",
	}, {
		name:     "control-plane and deleting Machines are not counted",
		machines: []Machine{{Name: "cp", ControlPlane: true, NodeHealthy: F}, {Name: "old", Deleting: true, NodeHealthy: F}, healthy("a")},
		status:   T, reason: "WorkersAvailable", message: "1 of 1 worker Machines healthy, 1 needed (50%)",
	}, {
		name: "a custom threshold of 75%", machines: []Machine{healthy("a"), healthy("b"), healthy("c"), machine("d", F, "", "")}, threshold: 0.75,
		status: T, reason: "WorkersAvailable", message: "3 of 4 worker Machines healthy, 3 needed (75%); unhealthy: d",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := byType(Conditions(Input{Machines: tt.machines, WorkersThreshold: tt.threshold}), clusterv1alpha1.ConditionWorkersAvailable)
			if got.Status != tt.status || got.Reason != tt.reason || got.Message != tt.message {
				t.Errorf("WorkersAvailable = {%s %s %q}, want {%s %s %q}", got.Status, got.Reason, got.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}

func TestPullMembersAreReachableWhileTheirAgentsLeaseIsFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(renewedAgo time.Duration) *Lease {
		return &Lease{RenewTime: now.Add(-renewedAgo), Duration: 40 * time.Second}
	}
	tests := []struct {
		name      string
		lease     *Lease
		status    metav1.ConditionStatus
		reason    string
		recheckAt time.Time
	}{
		{"no Lease yet: Unknown", nil, U, "NoAgentLease", time.Time{}},
		{"renewed 10s ago of 40s: reachable, recheck when it runs out", lease(10 * time.Second), T, "Reachable", now.Add(30 * time.Second)},
		{"renewed 40s ago of 40s: expired", lease(40 * time.Second), F, "LeaseExpired", time.Time{}},
		{"renewed long ago: expired", lease(time.Hour), F, "LeaseExpired", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The probe says True: a Pull member's reachability is its agent's, not the hub's.
			in := Input{Pull: true, Lease: tt.lease, Now: now, Enrolled: true,
				RemoteConnectionProbe: cond(T, "", ""), ControlPlaneAvailable: cond(T, "", "")}
			got := byType(Conditions(in), clusterv1alpha1.ConditionReachable)
			if got.Status != tt.status || got.Reason != tt.reason {
				t.Errorf("Reachable = {%s %s %q}, want {%s %s}", got.Status, got.Reason, got.Message, tt.status, tt.reason)
			}
			if at := RecheckAt(in); !at.Equal(tt.recheckAt) {
				t.Errorf("RecheckAt = %v, want %v", at, tt.recheckAt)
			}
		})
	}
}

func TestPausedAndRollingOutClustersAreNotFailures(t *testing.T) {
	rolling := cond(T, "RollingOut", "")
	degraded := []Machine{machine("a", F, F, ""), machine("b", F, F, "")}
	type want struct{ reachable, cp, workers, ready metav1.ConditionStatus }
	tests := []struct {
		name    string
		in      Input
		want    want
		reasons want // as strings in the status fields' stead
	}{{
		name: "paused with everything failing: Unknown, reason ClusterPaused",
		in:   Input{Paused: true, Enrolled: true, RemoteConnectionProbe: probeFailed, ControlPlaneAvailable: cpDown, Machines: degraded},
		want: want{U, U, U, U}, reasons: want{"ClusterPaused", "ClusterPaused", "ClusterPaused", "ClusterPaused"},
	}, {
		name: "paused and healthy: unchanged",
		in:   Input{Paused: true, Enrolled: true, RemoteConnectionProbe: probeOK, ControlPlaneAvailable: cpOK},
		want: want{T, T, T, T}, reasons: want{"Reachable", "ControlPlaneAvailable", "NoWorkers", "Ready"},
	}, {
		name: "rolling out with the API answering: control plane and workers are not failures",
		in:   Input{Enrolled: true, RollingOut: rolling, RemoteConnectionProbe: probeOK, ControlPlaneAvailable: cpDown, Machines: degraded},
		want: want{T, U, U, U}, reasons: want{"Reachable", "RollingOut", "RollingOut", "RollingOut"},
	}, {
		name: "rolling out but unreachable: a failure",
		in:   Input{Enrolled: true, RollingOut: rolling, RemoteConnectionProbe: probeFailed, ControlPlaneAvailable: cpDown, Machines: degraded},
		want: want{F, F, F, F}, reasons: want{"Unreachable", "ControlPlaneUnavailable", "WorkersDegraded", "Unreachable"},
	}, {
		name: "RollingOut False: failures count",
		in:   Input{Enrolled: true, RollingOut: cond(F, "NotRollingOut", ""), RemoteConnectionProbe: probeOK, ControlPlaneAvailable: cpDown},
		want: want{T, F, T, F}, reasons: want{"Reachable", "ControlPlaneUnavailable", "NoWorkers", "ControlPlaneUnavailable"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(tt.in)
			for i, w := range []struct {
				typ            string
				status, reason metav1.ConditionStatus
			}{
				{clusterv1alpha1.ConditionReachable, tt.want.reachable, tt.reasons.reachable},
				{clusterv1alpha1.ConditionControlPlaneAvailable, tt.want.cp, tt.reasons.cp},
				{clusterv1alpha1.ConditionWorkersAvailable, tt.want.workers, tt.reasons.workers},
				{clusterv1alpha1.ConditionReady, tt.want.ready, tt.reasons.ready},
			} {
				c := got[i]
				if c.Type != w.typ || c.Status != w.status || c.Reason != string(w.reason) {
					t.Errorf("%s = {%s %s %q}, want {%s %s %s}", c.Type, c.Status, c.Reason, c.Message, w.typ, w.status, w.reason)
				}
			}
		})
	}
	got := Conditions(tests[0].in)[1]
	wantMsg := "the Cluster is paused, so this is not counted as a failure: ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available"
	if got.Message != wantMsg {
		t.Errorf("paused message = %q, want %q", got.Message, wantMsg)
	}
}
