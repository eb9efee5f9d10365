package e2e

import (
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// managerRefusals lists the hub requests of flotilla-manager, which runs as
// the release's ServiceAccount, that RBAC or the release's admission
// policies refused (403) over the whole suite: each is a right the product
// needs and the release does not give it, or a write it attempts that its
// admission policy forbids. Left out: writes into a namespace being
// deleted (the apiserver's own 403, a race every controller meets), and
// requests while the hub apiserver was down or just restarted (it refuses
// until its RBAC informers have synced, kubernetes/kubernetes#121635).
func managerRefusals(f *fleet.Fleet) []string {
	logs, err := filepath.Glob(filepath.Join(filepath.Dir(f.Hub.AuditLog()), "audit*.log"))
	Expect(err).NotTo(HaveOccurred())
	Expect(logs).NotTo(BeEmpty(), "no audit log of the hub in %s", filepath.Dir(f.Hub.AuditLog()))
	outages := f.Hub.Outages()
	duringAnOutage := func(e auditEvent) bool {
		for _, o := range outages {
			if !e.StageTimestamp.Time.Before(o.From) && (o.To.IsZero() || !e.StageTimestamp.Time.After(o.To)) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, log := range logs {
		for _, e := range auditEvents(log, func(e auditEvent) bool {
			return e.User.Username == fleet.ManagerUser() && e.ResponseStatus != nil && e.ResponseStatus.Code == 403 &&
				!strings.Contains(e.ResponseStatus.Message, "because it is being terminated") && !duringAnOutage(e)
		}) {
			what := e.Verb
			if r := e.ObjectRef; r != nil {
				what = fmt.Sprintf("%s %s/%s/%s %s/%s", e.Verb, r.APIGroup, r.Resource, r.Subresource, r.Namespace, r.Name)
			}
			out = append(out, fmt.Sprintf("%s at %s: %s", what, e.StageTimestamp.Format("15:04:05.000"), e.ResponseStatus.Message))
		}
	}
	return out
}
