package framework

// Code classifies a filter outcome.
type Code uint8

const (
	// Fits: the member passes.
	Fits Code = iota
	// Unfit: the member can never take the binding as things are (wrong
	// labels, taints, not Ready...). All members unfit means NoClusterFit.
	Unfit
	// Insufficient: the member would fit but lacks capacity now. When every
	// otherwise-fitting member lacks capacity the binding is Unschedulable.
	Insufficient
	// Held: the binding already runs on the member, which would not be
	// chosen anew (not Ready, cordoned, an untolerated taint): it keeps the
	// replicas it holds there but takes no more. Moving them away is
	// eviction's job (rate limited, after tolerationSeconds), not the
	// scheduler's. The remaining filters still run and may reject it.
	Held
)

// Status is a filter's verdict on one member; the zero value passes.
type Status struct {
	Code   Code
	Reason string
}

// Passed says whether the member passes.
func (s Status) Passed() bool { return s.Code == Fits }

// Reject returns an Unfit status.
func Reject(reason string) Status { return Status{Code: Unfit, Reason: reason} }

// Short returns an Insufficient status.
func Short(reason string) Status { return Status{Code: Insufficient, Reason: reason} }

// Hold returns a Held status.
func Hold(reason string) Status { return Status{Code: Held, Reason: reason} }

// RejectOrHold rejects a member the binding does not run on, and holds one
// it runs on (see Held).
func RejectOrHold(c *Cycle, m *Member, reason string) Status {
	if c.Holds(m.Name) {
		return Hold(reason)
	}
	return Reject(reason)
}

// Plugin names itself in explanations.
type Plugin interface {
	Name() string
}

// FilterPlugin drops members that must not take the binding.
type FilterPlugin interface {
	Plugin
	Filter(c *Cycle, m *Member) Status
}

// MaxScore is the highest score a ScorePlugin gives.
const MaxScore int64 = 100

// ScorePlugin ranks members that passed the filters, 0..MaxScore.
type ScorePlugin interface {
	Plugin
	Score(c *Cycle, m *Member) int64
}

// ScoreNormalizer is implemented by score plugins whose raw scores only mean
// something relative to each other; it rescales them to 0..MaxScore in place.
// members[i] is the member index scored scores[i].
type ScoreNormalizer interface {
	NormalizeScores(c *Cycle, members []int, scores []int64)
}

// WeightedScorer is a ScorePlugin with the weight of its score in the total.
type WeightedScorer struct {
	Plugin ScorePlugin
	Weight int64
}
