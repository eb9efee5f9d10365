package plugins

import (
	"fmt"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// ReasonNoAPIEnablements is given for members that report no served APIs:
// whether they serve the resource is unknown, and guessing would push Works
// a member may reject.
const ReasonNoAPIEnablements = "no API enablements reported: cannot tell whether the resource is served"

// APIEnablement drops members that do not serve the binding's resource.
type APIEnablement struct{}

func (APIEnablement) Name() string { return "APIEnablement" }

func (APIEnablement) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if c.Kind == "" {
		return framework.Status{}
	}
	if !m.APIsReported {
		return framework.Reject(ReasonNoAPIEnablements)
	}
	if !c.Served[m.Index] {
		return framework.Reject(fmt.Sprintf("%s %s is not served", c.APIVersion, c.Kind))
	}
	return framework.Status{}
}
