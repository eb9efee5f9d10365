package plugins

import (
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// TaintToleration drops members with a NoSchedule or NoExecute taint that the
// placement's clusterTolerations do not tolerate. Both effects filter: a new
// placement must not land where existing ones are being moved away from. A
// member the binding already runs on keeps its replicas there
// (framework.Held): NoSchedule never moves them, and NoExecute moves them
// through the taint manager, which honours tolerationSeconds and the
// eviction rate.
type TaintToleration struct{}

func (TaintToleration) Name() string { return "TaintToleration" }

func (TaintToleration) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	for i := range m.Taints {
		if !capacity.Tolerates(c.Tolerations, &m.Taints[i]) {
			return framework.RejectOrHold(c, m, m.TaintReasons[i])
		}
	}
	return framework.Status{}
}
