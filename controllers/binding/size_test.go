package binding

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestAWorkOverTheSizeLimitIsRefusedWithItsSizeAndTheLimit(t *testing.T) {
	manifest := func(n int) workv1alpha1.Manifest {
		return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(strings.Repeat("x", n))}}
	}
	if err := checkSize("m1", []workv1alpha1.Manifest{manifest(MaxWorkManifestBytes / 2), manifest(MaxWorkManifestBytes / 2)}); err != nil {
		t.Fatalf("exactly the limit is accepted, got %v", err)
	}
	err := checkSize("m1", []workv1alpha1.Manifest{manifest(MaxWorkManifestBytes / 2), manifest(MaxWorkManifestBytes/2 + 1)})
	var big *ErrWorkTooLarge
	if !errors.As(err, &big) || big.Bytes != MaxWorkManifestBytes+1 || big.Member != "m1" {
		t.Fatalf("one byte over: got %v", err)
	}
	for _, want := range []string{"member m1", "1048577 bytes", "limit of 1048576 bytes", "keeps its previous Work"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}
