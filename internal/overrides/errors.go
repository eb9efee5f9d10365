package overrides

import (
	"errors"
	"fmt"
	"strings"
)

// ErrPathNotFound is wrapped by errors about a JSON pointer that resolves to
// nothing in the object, e.g. a replace or remove of a missing field.
var ErrPathNotFound = errors.New("does not exist")

// Error says which policy, rule and overrider failed, at which path, and why.
// Its message reads e.g.
//
//	OverridePolicy ns/p rule 0 plaintext[1]: path /spec/foo does not exist
type Error struct {
	Policy PolicyRef
	Rule   RuleIndex
	// Overrider is the field at fault: an overrider list's name, e.g.
	// "plaintext" or "imageOverrider"; "targetCluster" for the rule's
	// affinity; "resourceSelectors" (with Rule NoRule) for a selector.
	Overrider string
	// Index is the position in that list; -1 for targetCluster.
	Index int
	// Path is the JSON pointer the failure is about, when there is one.
	Path string
	Err  error
}

func (e *Error) Error() string {
	where := e.Policy.String()
	if e.Rule != NoRule {
		where += " " + e.Rule.String()
	}
	switch {
	case e.Overrider == "":
	case e.Index < 0:
		where += " " + e.Overrider
	default:
		where += fmt.Sprintf(" %s[%d]", e.Overrider, e.Index)
	}
	return where + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// NoRule is the Rule of an Error about the policy's resourceSelectors.
const NoRule RuleIndex = -2

// pathError is a failure at one JSON pointer of the object. Its message
// starts with the path: "path /spec/foo does not exist",
// "path /data/x is not a string".
type pathError struct {
	Path    string
	Reason  string // reads after the path, e.g. "is not a string"
	Err     error  // optional cause
	missing bool   // the path resolves to nothing: errors.Is ErrPathNotFound
}

func (e *pathError) Error() string {
	msg := "path " + e.Path + " " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *pathError) Unwrap() error { return e.Err }

// notFound reports a pointer that resolves to nothing.
func notFound(path string) error {
	return &pathError{Path: path, Reason: ErrPathNotFound.Error(), missing: true}
}

// missingParent reports an add below a field that does not exist.
func missingParent(path string) error {
	parent := path[:strings.LastIndex(path, "/")]
	if parent == "" {
		parent = "/"
	}
	return &pathError{Path: path, Reason: "cannot be added: its parent " + parent + " " + ErrPathNotFound.Error(), missing: true}
}

// Is lets errors.Is(err, ErrPathNotFound) see a missing path.
func (e *pathError) Is(target error) bool {
	return target == ErrPathNotFound && e.missing
}

// overriderError attributes err to one overrider of one rule of one policy.
func overriderError(policy PolicyRef, rule RuleIndex, overrider string, index int, err error) *Error {
	e := &Error{Policy: policy, Rule: rule, Overrider: overrider, Index: index, Err: err}
	var pe *pathError
	if errors.As(err, &pe) {
		e.Path = pe.Path
	}
	return e
}
