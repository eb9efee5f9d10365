package overrides

import (
	"strconv"
	"strings"
)

// pointer is a parsed RFC 6901 JSON pointer into an unstructured object.
type pointer struct {
	raw    string
	tokens []string
}

// parsePointer parses p; the empty pointer would address the whole object,
// which no overrider may replace, so it is rejected like any path without a
// leading slash.
func parsePointer(p string) (pointer, error) {
	if !strings.HasPrefix(p, "/") {
		return pointer{}, &pathError{Path: p, Reason: "is not a JSON pointer: it must start with /"}
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		// ~1 before ~0, so that "~01" decodes to "~1" (RFC 6901 section 4).
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return pointer{raw: p, tokens: tokens}, nil
}

// get returns the value p addresses in doc, or a notFound error.
func (p pointer) get(doc any) (any, error) {
	cur := doc
	for _, tok := range p.tokens {
		next, ok := child(cur, tok)
		if !ok {
			return nil, notFound(p.raw)
		}
		cur = next
	}
	return cur, nil
}

// set replaces the existing value p addresses in doc; like a JSON patch
// replace it never creates a field.
func (p pointer) set(doc any, value any) error {
	parent, err := pointer{raw: p.raw, tokens: p.tokens[:len(p.tokens)-1]}.get(doc)
	if err != nil {
		return notFound(p.raw)
	}
	last := p.tokens[len(p.tokens)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[last]; !ok {
			return notFound(p.raw)
		}
		c[last] = value
	case []any:
		i, ok := arrayIndex(last, len(c))
		if !ok {
			return notFound(p.raw)
		}
		c[i] = value
	default:
		return notFound(p.raw)
	}
	return nil
}

// child steps into a map by key or a slice by decimal index.
func child(node any, tok string) (any, bool) {
	switch c := node.(type) {
	case map[string]any:
		v, ok := c[tok]
		return v, ok
	case []any:
		i, ok := arrayIndex(tok, len(c))
		if !ok {
			return nil, false
		}
		return c[i], true
	default:
		return nil, false
	}
}

// arrayIndex accepts RFC 6901 array indices: decimal, no sign, no leading zero.
func arrayIndex(tok string, length int) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.ContainsAny(tok, "+-") {
		return 0, false
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= length {
		return 0, false
	}
	return i, true
}
