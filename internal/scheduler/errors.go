package scheduler

import (
	"errors"
	"fmt"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Error is a scheduling failure. Reason is the binding's Scheduled condition
// reason: NoClusterFit, Unschedulable, QuotaExceeded or SchedulerError.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Reason + ": " + e.Message }

func noClusterFit(format string, args ...any) *Error {
	return &Error{Reason: workv1alpha1.BindingReasonNoClusterFit, Message: fmt.Sprintf(format, args...)}
}

func unschedulable(format string, args ...any) *Error {
	return &Error{Reason: workv1alpha1.BindingReasonUnschedulable, Message: fmt.Sprintf(format, args...)}
}

func schedulerError(format string, args ...any) *Error {
	return &Error{Reason: workv1alpha1.BindingReasonSchedulerError, Message: fmt.Sprintf(format, args...)}
}

// ReasonOf is the Scheduled condition reason for the outcome of Schedule:
// Success for nil, the Error's reason, SchedulerError for any other error.
func ReasonOf(err error) string {
	if err == nil {
		return workv1alpha1.BindingReasonSuccess
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return workv1alpha1.BindingReasonSchedulerError
}
