package scheduling

import (
	"fmt"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func fleetOf(n int) []clusterv1alpha1.MemberCluster {
	out := make([]clusterv1alpha1.MemberCluster, n)
	for i := range out {
		out[i].ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("m%04d", i), ResourceVersion: fmt.Sprint(100 + i)}
	}
	return out
}

// The snapshot is reused while the fleet is unchanged, whatever order the
// cache lists it in, and rebuilt when any member changes, comes or goes.
func TestFingerprintIgnoresListOrderAndSeesEveryChange(t *testing.T) {
	fleet := fleetOf(1000)
	want := fingerprint(fleet)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := append([]clusterv1alpha1.MemberCluster(nil), fleet...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := fingerprint(shuffled); got != want {
			t.Fatalf("fingerprint of a shuffled fleet %d, want %d", got, want)
		}
	}
	updated := append([]clusterv1alpha1.MemberCluster(nil), fleet...)
	updated[500].ResourceVersion = "999999"
	if fingerprint(updated) == want {
		t.Error("an updated member leaves the fingerprint unchanged")
	}
	if fingerprint(fleet[:999]) == want {
		t.Error("a member gone leaves the fingerprint unchanged")
	}
	if fingerprint(append(fleetOf(1000), clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "new", ResourceVersion: "1"}})) == want {
		t.Error("a member added leaves the fingerprint unchanged")
	}
}
