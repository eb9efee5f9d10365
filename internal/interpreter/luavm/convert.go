package luavm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// shape is what a table stands for in JSON.
type shape uint8

const (
	shapeUnknown shape = iota
	shapeMap
	shapeList
	shapeOmit // an empty table of unknown shape that is dropped
)

// maxDepth bounds the nesting of converted values.
const maxDepth = 256

// converter moves JSON-like values (as in unstructured.Unstructured)
// between Go and Lua for one call. It remembers the shape of every table
// it made, so that a table the script returns empty keeps the shape it had
// when it was given.
type converter struct {
	ctx      context.Context
	shapes   map[*lua.LTable]shape
	nulls    map[*lua.LTable][]string // keys whose value was nil
	visiting map[*lua.LTable]bool
	steps    int
}

func newConverter(ctx context.Context) *converter {
	return &converter{ctx: ctx, shapes: map[*lua.LTable]shape{}, nulls: map[*lua.LTable][]string{}, visiting: map[*lua.LTable]bool{}}
}

// toLua converts a JSON-like Go value: maps to tables with string keys,
// slices to sequences, numbers to Lua numbers. A nil in a map leaves the
// key out, since Lua tables cannot hold nil (fromLua puts it back if the
// script did not set the key). Other types go through JSON.
func (c *converter) toLua(L *lua.LState, v any) (lua.LValue, error) {
	return c.encode(L, v, 0)
}

func (c *converter) encode(L *lua.LState, v any, depth int) (lua.LValue, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch t := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(t), nil
	case string:
		return lua.LString(t), nil
	case int64:
		return lua.LNumber(t), nil
	case int:
		return lua.LNumber(t), nil
	case int32:
		return lua.LNumber(t), nil
	case int16:
		return lua.LNumber(t), nil
	case int8:
		return lua.LNumber(t), nil
	case uint64:
		return lua.LNumber(t), nil
	case uint32:
		return lua.LNumber(t), nil
	case uint16:
		return lua.LNumber(t), nil
	case uint8:
		return lua.LNumber(t), nil
	case uint:
		return lua.LNumber(t), nil
	case float64:
		return lua.LNumber(t), nil
	case float32:
		return lua.LNumber(t), nil
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return nil, err
		}
		return lua.LNumber(f), nil
	case map[string]any:
		tb := L.CreateTable(0, len(t))
		c.shapes[tb] = shapeMap
		for k, e := range t {
			if e == nil {
				c.nulls[tb] = append(c.nulls[tb], k)
				continue
			}
			lv, err := c.encode(L, e, depth+1)
			if err != nil {
				return nil, err
			}
			tb.RawSetString(k, lv)
		}
		return tb, nil
	case []any:
		tb := L.CreateTable(len(t), 0)
		c.shapes[tb] = shapeList
		for i, e := range t {
			lv, err := c.encode(L, e, depth+1)
			if err != nil {
				return nil, err
			}
			tb.RawSetInt(i+1, lv)
		}
		return tb, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	generic, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	return c.encode(L, generic, depth)
}

// fromLua converts a value a script returned to a JSON-like Go value:
//
//   - a table with string keys is a map[string]any, a table with keys
//     1..n is a []any (holes, up to half of it, become nil); other keys,
//     or both kinds at once, are an error, as are functions and cycles;
//   - a whole number is an int64 and others float64, unless the
//     reference value at the same place is a float64: then it stays one;
//   - a null field of a map Go gave the script comes back null unless the
//     script set it;
//   - an empty table keeps the shape of the table it was when Go gave it
//     to the script; a table the script made takes the shape of the
//     reference value at the same place; failing both, it is empty (the
//     root: shape root; in a list: an empty map) or, as a field of a
//     map, left out, as Karmada does.
//
// refs are the objects the script was given, at the root of the result
// (for example desired and observed for Retain).
func (c *converter) fromLua(v lua.LValue, root shape, refs ...any) (any, error) {
	out, _, err := c.decode(v, "", refs, 0, root)
	return out, err
}

// into converts a table into a typed value through its JSON form.
func (c *converter) into(tb *lua.LTable, root shape, out any) error {
	v, err := c.fromLua(tb, root)
	if err != nil {
		return err
	}
	return jsonInto(v, out)
}

func describe(path string) string {
	if path == "" {
		return "the value"
	}
	return path
}

func (c *converter) decode(v lua.LValue, path string, refs []any, depth int, empty shape) (any, bool, error) {
	switch t := v.(type) {
	case *lua.LNilType:
		return nil, false, nil
	case lua.LBool:
		return bool(t), false, nil
	case lua.LString:
		return string(t), false, nil
	case lua.LNumber:
		n, err := number(t, refs)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", describe(path), err)
		}
		return n, false, nil
	case *lua.LTable:
		return c.table(t, path, refs, depth, empty)
	}
	return nil, false, fmt.Errorf("%s is a Lua %s, which has no JSON form", describe(path), v.Type())
}

func number(n lua.LNumber, refs []any) (any, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		if len(refs) > 0 {
			if _, ok := refs[0].(float64); ok {
				return f, nil
			}
		}
		return int64(f), nil
	}
	return f, nil
}

func (c *converter) table(t *lua.LTable, path string, refs []any, depth int, empty shape) (any, bool, error) {
	if c.steps++; c.steps%256 == 0 && c.ctx.Err() != nil {
		return nil, false, c.ctx.Err()
	}
	if depth > maxDepth {
		return nil, false, fmt.Errorf("%s is nested deeper than %d levels", describe(path), maxDepth)
	}
	if c.visiting[t] {
		return nil, false, fmt.Errorf("%s contains itself", describe(path))
	}
	c.visiting[t] = true
	defer delete(c.visiting, t)

	var strs, ints, maxKey int
	var bad lua.LValue
	t.ForEach(func(k, _ lua.LValue) {
		switch k := k.(type) {
		case lua.LString:
			strs++
		case lua.LNumber:
			if f := float64(k); f >= 1 && f == math.Trunc(f) && f <= math.MaxInt32 {
				ints++
				maxKey = max(maxKey, int(f))
				return
			}
			bad = k
		default:
			bad = k
		}
	})
	switch {
	case bad != nil:
		return nil, false, fmt.Errorf("%s has the key %s (a %s): only field names and list indices 1..n convert",
			describe(path), bad.String(), bad.Type())
	case strs > 0 && ints > 0:
		return nil, false, fmt.Errorf("%s mixes field names and list indices", describe(path))
	case strs == 0 && ints == 0:
		s := c.shapes[t]
		for _, r := range refs {
			if s != shapeUnknown {
				break
			}
			switch r.(type) {
			case []any:
				s = shapeList
			case map[string]any:
				s = shapeMap
			}
		}
		if s == shapeUnknown {
			s = empty
		}
		switch s {
		case shapeList:
			return []any{}, false, nil
		case shapeOmit:
			return nil, true, nil
		}
		return c.restoreNulls(t, map[string]any{}), false, nil
	case ints > 0:
		if maxKey > 2*ints {
			return nil, false, fmt.Errorf("%s is a sparse list (%d items, up to index %d)", describe(path), ints, maxKey)
		}
		out := make([]any, maxKey)
		for i := range out {
			e := t.RawGet(lua.LNumber(i + 1))
			p := path + "[" + strconv.Itoa(i) + "]"
			v, _, err := c.decode(e, p, elemRefs(refs, i), depth+1, shapeMap)
			if err != nil {
				return nil, false, err
			}
			out[i] = v
		}
		return out, false, nil
	}
	out := make(map[string]any, strs)
	var err error
	t.ForEach(func(k, e lua.LValue) {
		if err != nil {
			return
		}
		key := string(k.(lua.LString))
		p := key
		if path != "" {
			p = path + "." + key
		}
		v, omit, derr := c.decode(e, p, childRefs(refs, key), depth+1, shapeOmit)
		if derr != nil {
			err = derr
			return
		}
		if !omit {
			out[key] = v
		}
	})
	if err != nil {
		return nil, false, err
	}
	return c.restoreNulls(t, out), false, nil
}

// restoreNulls puts back the null fields of a map Go gave the script that
// the script left unset.
func (c *converter) restoreNulls(t *lua.LTable, out map[string]any) map[string]any {
	for _, k := range c.nulls[t] {
		if _, ok := out[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

func childRefs(refs []any, key string) []any {
	var out []any
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok {
			if e, ok := m[key]; ok && e != nil {
				out = append(out, e)
			}
		}
	}
	return out
}

func elemRefs(refs []any, i int) []any {
	var out []any
	for _, r := range refs {
		if l, ok := r.([]any); ok && len(l) > 0 {
			if i < len(l) {
				out = append(out, l[i])
			} else {
				out = append(out, l[0])
			}
		}
	}
	return out
}

// decodeJSON parses JSON as unstructured does: integers as int64, other
// numbers as float64.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	}
	return v
}
