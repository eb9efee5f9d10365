package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The manager's metrics endpoint answers only hub identities allowed to
// get /metrics, and carries Flotilla's own series.
var _ = Describe("Metrics", func() {
	It("refuses anonymous and unauthorised scrapes and serves Flotilla's series to an authorised one", func(ctx SpecContext) {
		url := theFleet.Hub.MetricsURL()
		if url == "" {
			Skip("this fleet runs no flotilla-manager: no metrics endpoint to scrape")
		}
		By("placing a workload, so that a decision and an apply are measured")
		const ns = "metrics"
		federatedNamespace(ctx, ns)
		Expect(theFleet.Apply(ctx, []byte(isolationPolicy(ns, "measured", "member1")+"\n---\n"+isolationDeployment(ns, "measured", "measured", "v1")))).To(Succeed())
		_, err := theFleet.WaitWorkloadReady(ctx, ns, "Deployment", "measured", 2*timeUnit)
		Expect(err).NotTo(HaveOccurred())

		By("without a token")
		var cs *kubernetes.Clientset
		code, _ := scrape(ctx, url, "")
		Expect(code).To(Equal(http.StatusUnauthorized))

		By("with the token of a ServiceAccount that may not get /metrics")
		cs, err = kubernetes.NewForConfig(theFleet.Hub.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "not-a-scraper"}}
		_, err = cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = cs.CoreV1().ServiceAccounts("default").Delete(ctx, sa.Name, metav1.DeleteOptions{})
		})
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		code, _ = scrape(ctx, url, tr.Status.Token)
		Expect(code).To(Equal(http.StatusForbidden))

		By("as the hub's admin")
		code, body := scrape(ctx, url, theFleet.Hub.RESTConfig().BearerToken)
		Expect(code).To(Equal(http.StatusOK))
		for _, series := range []string{
			`flotilla_scheduling_decision_duration_seconds_count{result="Success"}`,
			`flotilla_work_apply_duration_seconds_count{member="member1"}`,
			`flotilla_work_render_to_applied_seconds_count{member="member1"}`,
			"flotilla_eviction_mode",
		} {
			Expect(body).To(ContainSubstring(series))
		}
	})
})

// scrape GETs the metrics endpoint with a bearer token (none when empty).
func scrape(ctx context.Context, url, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The endpoint's certificate is self-signed by the manager.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test scrape of a self-signed loopback endpoint
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("GET %s", url))
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}
