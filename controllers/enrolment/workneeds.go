package enrolment

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// workNeeds remembers what each Pull-mode member's Works need
// (applier.NeedOf), by Work UID and generation. The agent's grant is made
// from every Work of the member whenever one is added, and decoding each
// Work's manifests again every time was a fifth of the manager's CPU while
// a fleet of 30,000 Works filled (BenchmarkManagerMemory): O(Works) decodes
// per new Work. A need is remembered only when every manifest was mapped:
// one that left a kind out may grow once the hub serves the kind.
type workNeeds struct {
	mu       sync.Mutex
	byMember map[string]map[types.UID]rememberedNeed
}

type rememberedNeed struct {
	generation int64
	need       applier.Need
}

// of returns the needs of the member's works, in order, and forgets the
// member's Works that are no longer among them.
func (n *workNeeds) of(mapper meta.RESTMapper, member string, works []workv1alpha1.Work) []applier.Need {
	n.mu.Lock()
	defer n.mu.Unlock()
	previous := n.byMember[member]
	current := make(map[types.UID]rememberedNeed, len(works))
	needs := make([]applier.Need, len(works))
	for i := range works {
		w := &works[i]
		if r, ok := previous[w.UID]; ok && r.generation == w.Generation {
			needs[i], current[w.UID] = r.need, r
			continue
		}
		need, complete := applier.NeedOf(mapper, w)
		needs[i] = need
		if complete {
			current[w.UID] = rememberedNeed{generation: w.Generation, need: need}
		}
	}
	if n.byMember == nil {
		n.byMember = map[string]map[types.UID]rememberedNeed{}
	}
	if len(current) == 0 {
		delete(n.byMember, member)
	} else {
		n.byMember[member] = current
	}
	return needs
}
