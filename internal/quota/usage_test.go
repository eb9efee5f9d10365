package quota

import (
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// render is a ResourceList as "key=value" pairs sorted by key, for stated results.
func render(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func placedOn(pairs ...any) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, workv1alpha1.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
	}
	return out
}

func requirements(requests, limits corev1.ResourceList) *workv1alpha1.ReplicaRequirements {
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: requests, ResourceLimits: limits}
}

func TestUsage(t *testing.T) {
	cases := []struct {
		name string
		w    Workload
		want string
	}{
		{
			name: "an unscheduled binding uses nothing, not even its object count",
			w:    Workload{APIVersion: "apps/v1", Kind: "Deployment", Requirements: requirements(list("cpu", "1"), nil)},
			want: "",
		},
		{
			name: "requests count under the plain and the requests. key, times the replicas summed over members",
			w: Workload{APIVersion: "apps/v1", Kind: "Deployment",
				Requirements: requirements(list("cpu", "250m", "memory", "512Mi", "ephemeral-storage", "1Gi"), nil),
				Clusters:     placedOn("m1", 3, "m2", 5)},
			want: "count/deployments.apps=1 cpu=2 ephemeral-storage=8Gi memory=4Gi pods=8 requests.cpu=2 requests.ephemeral-storage=8Gi requests.memory=4Gi",
		},
		{
			name: "limits count under limits. only",
			w: Workload{APIVersion: "apps/v1", Kind: "StatefulSet",
				Requirements: requirements(list("cpu", "1"), list("cpu", "2", "memory", "1Gi")),
				Clusters:     placedOn("m1", 2)},
			want: "count/statefulsets.apps=1 cpu=2 limits.cpu=4 limits.memory=2Gi pods=2 requests.cpu=2",
		},
		{
			name: "extended resources and hugepages count under both names",
			w: Workload{APIVersion: "batch/v1", Kind: "Job",
				Requirements: requirements(list("nvidia.com/gpu", "2", "hugepages-2Mi", "64Mi"), nil),
				Clusters:     placedOn("m1", 1, "m2", 1, "m3", 1)},
			want: "count/jobs.batch=1 hugepages-2Mi=192Mi nvidia.com/gpu=6 pods=3 requests.hugepages-2Mi=192Mi requests.nvidia.com/gpu=6",
		},
		{
			name: "a Duplicated placement counts every member's copy, and the binding once",
			w: Workload{APIVersion: "apps/v1", Kind: "Deployment",
				Requirements: requirements(list("cpu", "100m"), nil),
				Clusters:     placedOn("m1", 4, "m2", 4, "m3", 4)},
			want: "count/deployments.apps=1 cpu=1200m pods=12 requests.cpu=1200m",
		},
		{
			name: "a placed kind without replicas counts as one object, under count/ and its legacy name",
			w:    Workload{APIVersion: "v1", Kind: "ConfigMap", Clusters: placedOn("m1", 0, "m2", 0)},
			want: "configmaps=1 count/configmaps=1",
		},
		{
			name: "kinds are pluralised as kubectl guesses without discovery",
			w:    Workload{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy", Clusters: placedOn("m1", 0)},
			want: "count/networkpolicies.networking.k8s.io=1",
		},
		{
			name: "a Deployment scaled to zero but placed uses its count only",
			w:    Workload{APIVersion: "apps/v1", Kind: "Deployment", Requirements: requirements(list("cpu", "1"), nil), Clusters: placedOn("m1", 0)},
			want: "count/deployments.apps=1",
		},
		{
			name: "a replica with no requirements takes a pod",
			w:    Workload{APIVersion: "apps/v1", Kind: "ReplicaSet", Clusters: placedOn("m1", 7)},
			want: "count/replicasets.apps=1 pods=7",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(Usage(tc.w)); got != tc.want {
				t.Errorf("Usage\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

func TestUsageIsExactForLargeFleets(t *testing.T) {
	// 64Gi × 10,000 replicas × 1000 (milli) overflows int64 milli-units;
	// quantities fall back to exact decimals instead.
	w := Workload{APIVersion: "apps/v1", Kind: "Deployment",
		Requirements: requirements(list("memory", "64Gi"), nil), Clusters: placedOn("m1", 10_000)}
	got := Usage(w)[corev1.ResourceMemory]
	if want := list("memory", "640000Gi")[corev1.ResourceMemory]; got.Cmp(want) != 0 {
		t.Errorf("memory = %s, want %s", got.String(), want.String())
	}
}

func TestResourceListArithmetic(t *testing.T) {
	a, b := list("cpu", "2", "memory", "1Gi"), list("cpu", "500m", "pods", "3")
	if got := render(Add(a, b)); got != "cpu=2500m memory=1Gi pods=3" {
		t.Errorf("Add = %s", got)
	}
	if got := render(Subtract(a, list("cpu", "2"))); got != "memory=1Gi" {
		t.Errorf("Subtract drops keys that reach zero: %s", got)
	}
	if got := render(Max(a, b)); got != "cpu=2 memory=1Gi pods=3" {
		t.Errorf("Max = %s", got)
	}
	if !Equal(list("cpu", "1"), list("cpu", "1000m")) || Equal(a, b) {
		t.Error("Equal compares amounts, not spellings")
	}
	if !Decreased(a, list("cpu", "3")) || Decreased(list("cpu", "1"), a) {
		t.Error("Decreased is true when some key of before is larger than after")
	}
	if got := render(Only(list("cpu", "60", "pods", "8"), list("cpu", "64", "limits.cpu", "80"))); got != "cpu=60 limits.cpu=0" {
		t.Errorf("Only = %s", got)
	}
}

func TestCheck(t *testing.T) {
	overall := list("cpu", "64", "limits.cpu", "80", "requests.memory", "32Gi", "requests.storage", "1Ti")
	cases := []struct {
		name          string
		used, request corev1.ResourceList
		want          []string
	}{
		{
			name:    "within the quota",
			used:    list("cpu", "60"),
			request: list("cpu", "4", "requests.cpu", "4"),
		},
		{
			name:    "past the quota: key, request, use and what is left",
			used:    list("cpu", "60"),
			request: list("cpu", "8"),
			want:    []string{"FederatedResourceQuota tenant/team: cpu: requested 8, used 60 of 64, 4 left"},
		},
		{
			name:    "every key past the quota, sorted",
			used:    list("cpu", "60", "limits.cpu", "79", "requests.memory", "31Gi"),
			request: list("cpu", "8", "limits.cpu", "2", "requests.memory", "2Gi"),
			want: []string{
				"FederatedResourceQuota tenant/team: cpu: requested 8, used 60 of 64, 4 left",
				"FederatedResourceQuota tenant/team: limits.cpu: requested 2, used 79 of 80, 1 left",
				"FederatedResourceQuota tenant/team: requests.memory: requested 2Gi, used 31Gi of 32Gi, 1Gi left",
			},
		},
		{
			name:    "a key the request does not grow never fails, even over the quota",
			used:    list("cpu", "70"),
			request: list("cpu", "-2", "requests.memory", "1Gi"),
		},
		{
			name:    "a quota lowered below use has nothing left",
			used:    list("cpu", "70"),
			request: list("cpu", "1"),
			want:    []string{"FederatedResourceQuota tenant/team: cpu: requested 1, used 70 of 64, 0 left"},
		},
		{
			name:    "storage is limited like every key (claims rendered from envelopes use it)",
			used:    list("requests.storage", "2Ti"),
			request: list("requests.storage", "1Ti"),
			want:    []string{"FederatedResourceQuota tenant/team: requests.storage: requested 1Ti, used 2Ti of 1Ti, 0 left"},
		},
		{
			name:    "keys not in overall are not limited",
			used:    list("memory", "1Ti"),
			request: list("memory", "1Ti", "pods", "1000"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range Check("tenant/team", overall, tc.used, tc.request) {
				got = append(got, v.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Check\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestExceededErrorNamesEveryViolation(t *testing.T) {
	err := &ExceededError{Violations: append(
		Check("tenant/a", list("cpu", "10"), list("cpu", "9"), list("cpu", "2")),
		Check("tenant/b", list("pods", "5"), list("pods", "5"), list("pods", "1"))...)}
	want := "FederatedResourceQuota tenant/a: cpu: requested 2, used 9 of 10, 1 left; FederatedResourceQuota tenant/b: pods: requested 1, used 5 of 5, 0 left"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err.Error(), want)
	}
}
