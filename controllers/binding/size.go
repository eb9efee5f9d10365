package binding

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// MaxWorkManifestBytes bounds the manifests of one Work: etcd refuses a
// request over its --max-request-bytes (1.5 MiB by default), and a Work
// also carries metadata and its members' status, so its manifests get
// 1 MiB of it.
const MaxWorkManifestBytes = 1 << 20

// ErrWorkTooLarge describes a Work whose manifests exceed the limit.
type ErrWorkTooLarge struct {
	Member string
	Bytes  int
}

func (e *ErrWorkTooLarge) Error() string {
	return fmt.Sprintf("the Work for member %s would carry %d bytes of manifests, over the limit of %d bytes (etcd's default --max-request-bytes of 1.5 MiB, less room for the Work's status); "+
		"the member keeps its previous Work: split the template, its dependencies or its envelope", e.Member, e.Bytes, MaxWorkManifestBytes)
}

// checkSize refuses manifests too large for one Work.
func checkSize(member string, manifests []workv1alpha1.Manifest) error {
	n := 0
	for _, m := range manifests {
		n += len(m.Raw)
	}
	if n > MaxWorkManifestBytes {
		return &ErrWorkTooLarge{Member: member, Bytes: n}
	}
	return nil
}

// tooLarge reports whether the hub refused a write for its size, which
// etcd answers with a server error rather than 413.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) || err != nil && strings.Contains(err.Error(), "request is too large")
}
