package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// memberOf returns the MemberCluster enrolled from a fleet member's CAPI Cluster.
func memberOf(ctx context.Context, m *fleet.Member) (*clusterv1alpha1.MemberCluster, error) {
	list := &clusterv1alpha1.MemberClusterList{}
	if err := theFleet.Hub.Client.List(ctx, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		ref := list.Items[i].Spec.ClusterRef
		if ref.Namespace == m.Spec.Namespace && ref.Name == m.Spec.Name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// readyMember waits for the member of m to be Enrolled and Ready.
func readyMember(ctx context.Context, m *fleet.Member) *clusterv1alpha1.MemberCluster {
	var mc *clusterv1alpha1.MemberCluster
	eventually(ctx, func(g Gomega) {
		var err error
		mc, err = memberOf(ctx, m)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mc).NotTo(BeNil(), "no MemberCluster for %s/%s", m.Spec.Namespace, m.Spec.Name)
		g.Expect(conditions.IsTrue(mc, clusterv1alpha1.ConditionEnrolled)).To(BeTrue(), "Enrolled: %+v", conditions.Get(mc, clusterv1alpha1.ConditionEnrolled))
		g.Expect(conditions.IsTrue(mc, clusterv1alpha1.ConditionReady)).To(BeTrue(), "Ready: %+v", conditions.Get(mc, clusterv1alpha1.ConditionReady))
	}).WithTimeout(3 * timeUnit).Should(Succeed())
	return mc
}

// auditEvent is the part of an apiserver audit record the specs read.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime `json:"stageTimestamp"`
}

func (e auditEvent) received() time.Time { return e.RequestReceivedTimestamp.Time }

// auditEvents reads an apiserver's audit log, keeping the records that match.
func auditEvents(path string, keep func(auditEvent) bool) []auditEvent {
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var out []auditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for s.Scan() {
		var e auditEvent
		if json.Unmarshal(s.Bytes(), &e) == nil && keep(e) {
			out = append(out, e)
		}
	}
	Expect(s.Err()).NotTo(HaveOccurred())
	return out
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
