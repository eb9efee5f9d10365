package agent

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// appliedWorks remembers, per Work, the generation the agent last applied
// in full and when. A Work whose generation is unchanged is not applied to
// the member again — after a hub outage, a reconnect, a rebuilt hub client,
// a status write that failed — only its status is read back, until drift
// repair is due: a full apply every driftRepair, as Push execution does.
type appliedWorks struct {
	driftRepair time.Duration

	mu    sync.Mutex
	works map[types.NamespacedName]appliedWork
}

type appliedWork struct {
	uid        types.UID
	generation int64
	at         time.Time
}

func newAppliedWorks(driftRepair time.Duration) *appliedWorks {
	return &appliedWorks{driftRepair: driftRepair, works: map[types.NamespacedName]appliedWork{}}
}

// freshFor is how long the member still holds this generation of the Work
// as the agent applied it in full, before drift repair is due; zero when the
// Work is to be applied now.
func (a *appliedWorks) freshFor(w *workv1alpha1.Work, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.works[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}]
	if !ok || got.uid != w.UID || got.generation != w.Generation {
		return 0
	}
	return max(0, got.at.Add(a.driftRepair).Sub(now))
}

// record notes the outcome of applying w at now: in sync, its generation is
// remembered; otherwise it is applied again next time.
func (a *appliedWorks) record(w *workv1alpha1.Work, now time.Time, inSync bool) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !inSync {
		delete(a.works, key)
		return
	}
	a.works[key] = appliedWork{uid: w.UID, generation: w.Generation, at: now}
}

// forget drops a Work that is gone.
func (a *appliedWorks) forget(key types.NamespacedName) {
	a.mu.Lock()
	delete(a.works, key)
	a.mu.Unlock()
}
