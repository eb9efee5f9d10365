package applier

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Applied remembers, per Work, the generation its executor (the hub's
// execution controller, or a Pull agent) last applied in full and when. A
// Work whose generation is unchanged is not applied to the member again —
// after a change in the member seen by its watch, a hub outage, a
// reconnect, a status write that failed — only its status is read back,
// until drift repair is due: a full apply every driftRepair.
type Applied struct {
	driftRepair time.Duration

	mu    sync.Mutex
	works map[types.NamespacedName]appliedWork
}

type appliedWork struct {
	uid        types.UID
	generation int64
	at         time.Time
}

// NewApplied remembers applies, with a full apply due every driftRepair.
func NewApplied(driftRepair time.Duration) *Applied {
	return &Applied{driftRepair: driftRepair, works: map[types.NamespacedName]appliedWork{}}
}

// FreshFor is how long the member still holds this generation of the Work
// as its executor applied it in full, before drift repair is due; zero when the
// Work is to be applied now.
func (a *Applied) FreshFor(w *workv1alpha1.Work, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.works[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}]
	if !ok || got.uid != w.UID || got.generation != w.Generation {
		return 0
	}
	return max(0, got.at.Add(a.driftRepair).Sub(now))
}

// Record notes the outcome of applying w at now: in sync, its generation is
// remembered; otherwise it is applied again next time.
func (a *Applied) Record(w *workv1alpha1.Work, now time.Time, inSync bool) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !inSync {
		delete(a.works, key)
		return
	}
	a.works[key] = appliedWork{uid: w.UID, generation: w.Generation, at: now}
}

// Forget drops a Work that is gone.
func (a *Applied) Forget(key types.NamespacedName) {
	a.mu.Lock()
	delete(a.works, key)
	a.mu.Unlock()
}

// ApplyOrRefresh applies a Work the member does not hold yet (or whose drift
// repair is due); one it holds as last applied is only read back, unless an
// object went missing or stopped being Flotilla's meanwhile. applied records
// the outcome.
func (a *Applier) ApplyOrRefresh(ctx context.Context, member string, w *workv1alpha1.Work, applied *Applied, now time.Time) (Outcome, error) {
	if fresh := applied.FreshFor(w, now); fresh > 0 {
		out, err := a.Refresh(ctx, member, w)
		if err != nil || out.InSync {
			if out.RequeueAfter > fresh {
				out.RequeueAfter = fresh // drift repair comes first
			}
			return out, err
		}
		ctrl.LoggerFrom(ctx).V(1).Info("An object of the Work changed in the member; applying the Work again")
	}
	out, err := a.Apply(ctx, member, w)
	applied.Record(w, now, err == nil && out.InSync)
	return out, err
}
