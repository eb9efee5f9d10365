package enrolment

import (
	"k8s.io/apimachinery/pkg/api/meta"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/internal/workmemo"
)

// workNeeds remembers what each Pull-mode member's Works need
// (applier.NeedOf). The agent's grant is made from every Work of the
// member whenever one is added, and decoding each Work's manifests again
// every time was a fifth of the manager's CPU while a fleet of 30,000
// Works filled (BenchmarkManagerMemory). A need is remembered only when
// every manifest was mapped: one that left a kind out may grow once the
// hub serves the kind.
type workNeeds struct {
	memo workmemo.Memo[applier.Need]
}

// of returns the needs of the member's works, in order.
func (n *workNeeds) of(mapper meta.RESTMapper, member string, works []workv1alpha1.Work) []applier.Need {
	needs := make([]applier.Need, 0, len(works))
	n.memo.Each(member, works, func(w *workv1alpha1.Work) (applier.Need, bool) {
		return applier.NeedOf(mapper, w)
	}, func(_ *workv1alpha1.Work, need applier.Need) {
		needs = append(needs, need)
	})
	return needs
}
