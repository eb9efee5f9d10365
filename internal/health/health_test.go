package health

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func cond(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Status: status, Reason: reason, Message: msg}
}

var (
	probeOK     = cond(metav1.ConditionTrue, "ProbeSucceeded", "")
	probeFailed = cond(metav1.ConditionFalse, "ProbeFailed", "connection refused")
	probeUnk    = cond(metav1.ConditionUnknown, "ProbeUnknown", "")
	cpOK        = cond(metav1.ConditionTrue, "Available", "")
	cpDown      = cond(metav1.ConditionFalse, "NotAvailable", "0 of 3 control plane machines available")
)

func TestConditionsMirrorCAPIAndSummariseReady(t *testing.T) {
	type want struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}
	tests := []struct {
		name                 string
		in                   Input
		reachable, cp, ready want
	}{{
		name:      "all True and enrolled: Ready",
		in:        Input{RemoteConnectionProbe: probeOK, ControlPlaneAvailable: cpOK, Enrolled: true},
		reachable: want{"True", "Reachable", "RemoteConnectionProbe is True (ProbeSucceeded)"},
		cp:        want{"True", "ControlPlaneAvailable", "ControlPlaneAvailable is True (Available)"},
		ready:     want{"True", "Ready", "reachable, control plane available, enrolled"},
	}, {
		name:      "probe False: not Ready because unreachable",
		in:        Input{RemoteConnectionProbe: probeFailed, ControlPlaneAvailable: cpOK, Enrolled: true},
		reachable: want{"False", "Unreachable", "RemoteConnectionProbe is False (ProbeFailed): connection refused"},
		cp:        want{"True", "ControlPlaneAvailable", "ControlPlaneAvailable is True (Available)"},
		ready:     want{"False", "Unreachable", "RemoteConnectionProbe is False (ProbeFailed): connection refused"},
	}, {
		name:      "control plane False: not Ready because the control plane is unavailable",
		in:        Input{RemoteConnectionProbe: probeOK, ControlPlaneAvailable: cpDown, Enrolled: true},
		reachable: want{"True", "Reachable", "RemoteConnectionProbe is True (ProbeSucceeded)"},
		cp:        want{"False", "ControlPlaneUnavailable", "ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available"},
		ready:     want{"False", "ControlPlaneUnavailable", "ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available"},
	}, {
		name:      "both False: the probe is named first, the message lists both",
		in:        Input{RemoteConnectionProbe: probeFailed, ControlPlaneAvailable: cpDown, Enrolled: true},
		reachable: want{"False", "Unreachable", "RemoteConnectionProbe is False (ProbeFailed): connection refused"},
		cp:        want{"False", "ControlPlaneUnavailable", "ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available"},
		ready: want{"False", "Unreachable", "RemoteConnectionProbe is False (ProbeFailed): connection refused; " +
			"ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available"},
	}, {
		name:      "conditions not reported: Unknown",
		in:        Input{Enrolled: true},
		reachable: want{"Unknown", "ReachabilityUnknown", "Cluster API has not reported RemoteConnectionProbe"},
		cp:        want{"Unknown", "ControlPlaneAvailabilityUnknown", "Cluster API has not reported ControlPlaneAvailable"},
		ready: want{"Unknown", "ReachabilityUnknown", "Cluster API has not reported RemoteConnectionProbe; " +
			"Cluster API has not reported ControlPlaneAvailable"},
	}, {
		name:      "a False input wins over an Unknown one",
		in:        Input{RemoteConnectionProbe: probeUnk, ControlPlaneAvailable: cpDown, Enrolled: true},
		reachable: want{"Unknown", "ReachabilityUnknown", "RemoteConnectionProbe is Unknown (ProbeUnknown)"},
		cp:        want{"False", "ControlPlaneUnavailable", "ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available"},
		ready: want{"False", "ControlPlaneUnavailable", "ControlPlaneAvailable is False (NotAvailable): 0 of 3 control plane machines available; " +
			"RemoteConnectionProbe is Unknown (ProbeUnknown)"},
	}, {
		name:      "healthy but not enrolled: not Ready",
		in:        Input{RemoteConnectionProbe: probeOK, ControlPlaneAvailable: cpOK},
		reachable: want{"True", "Reachable", "RemoteConnectionProbe is True (ProbeSucceeded)"},
		cp:        want{"True", "ControlPlaneAvailable", "ControlPlaneAvailable is True (Available)"},
		ready:     want{"False", "NotEnrolled", "the member is not enrolled yet"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(tt.in)
			if len(got) != 4 {
				t.Fatalf("got %d conditions, want 4", len(got))
			}
			for i, w := range []struct {
				typ string
				want
			}{{clusterv1alpha1.ConditionReachable, tt.reachable}, {clusterv1alpha1.ConditionControlPlaneAvailable, tt.cp}, {clusterv1alpha1.ConditionReady, tt.ready}} {
				if i == 2 {
					i = 3 // WorkersAvailable is third; see TestWorkersAvailable
				}
				c := got[i]
				if c.Type != w.typ || c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("condition %d = {%s %s %s %q}, want {%s %s %s %q}", i, c.Type, c.Status, c.Reason, c.Message, w.typ, w.status, w.reason, w.message)
				}
			}
		})
	}
}
