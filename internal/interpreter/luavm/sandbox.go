package luavm

import (
	"fmt"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// maxArrayIndex bounds the array part of Lua tables. gopher-lua fills every
// index up to a new key in one step, so `t[60000000] = 1` would allocate a
// gigabyte before any limit could look; larger integer keys go to the hash
// part instead. It replaces gopher-lua's package-wide default (64Mi) for the
// whole process: this package is its only user.
const maxArrayIndex = 1 << 20

func init() {
	lua.MaxArrayIndex = maxArrayIndex
}

// blocked are the base functions a script may not call, as in Karmada:
// they reach files, change environments or metatables, or run the GC.
var blocked = []string{
	"collectgarbage", "dofile", "getfenv", "getmetatable", "load", "loadfile",
	"loadstring", "module", "newproxy", "rawequal", "rawget", "rawset",
	"setfenv", "setmetatable",
}

// newState opens a state with only the sandbox's libraries.
func (vm *VM) newState(c *call) *lua.LState {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       vm.limits.CallStackSize,
		RegistrySize:        registrySize,
		RegistryMaxSize:     vm.limits.RegistryMaxSize,
		RegistryGrowStep:    registryGrowStep,
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}

	for _, name := range blocked {
		L.SetGlobal(name, L.NewFunction(unavailable(name)))
	}
	L.SetGlobal("_printregs", lua.LNil)
	L.SetGlobal("print", L.NewFunction(func(*lua.LState) int { return 0 }))

	max := vm.limits.MaxStringBytes
	str := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	guard(str, "rep", func(L *lua.LState) { checkRep(L, max) })
	guard(str, "format", func(L *lua.LState) { checkFormat(L) })
	guard(str, "gsub", func(L *lua.LState) { checkGsub(L, max) })
	str.RawSetString("dump", L.NewFunction(unavailable("string.dump")))
	tbl := L.GetGlobal(lua.TabLibName).(*lua.LTable)
	guard(tbl, "concat", func(L *lua.LState) { checkConcat(L, max) })

	os := L.NewTable()
	L.SetFuncs(os, map[string]lua.LGFunction{
		"time":     osTime,
		"date":     func(L *lua.LState) int { return osDate(L, max) },
		"difftime": osDifftime,
	})
	L.SetGlobal("os", os)

	kube := c.kubeLibrary(L)
	L.SetGlobal(kubeLibName, kube)
	L.SetGlobal("require", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckString(1)
		switch name {
		case kubeLibName:
			L.Push(kube)
		case lua.StringLibName, lua.TabLibName, lua.MathLibName, "os":
			L.Push(L.GetGlobal(name))
		case "_G":
			L.Push(L.Get(lua.GlobalsIndex))
		default:
			L.RaiseError("module %q is not available in the sandbox: only \"kube\" can be required", name)
		}
		return 1
	}))
	return L
}

func unavailable(name string) lua.LGFunction {
	return func(L *lua.LState) int {
		L.RaiseError("%s is not available in the sandbox", name)
		return 0
	}
}

// guard replaces lib[name] by a function that runs check, which raises an
// error for arguments that would build too much, then the original.
func guard(lib *lua.LTable, name string, check func(*lua.LState)) {
	orig, ok := lib.RawGetString(name).(*lua.LFunction)
	if !ok || !orig.IsG {
		panic("luavm: no Go function " + name)
	}
	lib.RawSetString(name, &lua.LFunction{IsG: true, Env: orig.Env, GFunction: func(L *lua.LState) int {
		check(L)
		return orig.GFunction(L)
	}})
}

func tooLong(L *lua.LState, fn string, n, max int) {
	if n > max || n < 0 {
		L.RaiseError("%s: the result would exceed the sandbox's limit of %d bytes per string", fn, max)
	}
}

func checkRep(L *lua.LState, max int) {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		return
	}
	if n > max/len(s) {
		tooLong(L, "string.rep", max+1, max)
	}
}

// checkFormat refuses widths and precisions of more than two digits and
// '*', as Lua 5.1 does; the result is then at most ~100 bytes per
// directive beyond its arguments.
func checkFormat(L *lua.LState) {
	f := L.CheckString(1)
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		digits := 0
		for ; i < len(f) && f[i] >= '0' && f[i] <= '9'; i++ {
			digits++
		}
		if i < len(f) && f[i] == '.' {
			i++
			p := 0
			for ; i < len(f) && f[i] >= '0' && f[i] <= '9'; i++ {
				p++
			}
			digits = max(digits, p)
		}
		if digits > 2 || (i < len(f) && f[i] == '*') {
			L.RaiseError("invalid format (width or precision too long)")
		}
	}
}

// checkGsub bounds the result of string.gsub with a string or table
// replacement: matches never overlap, so captures expanded into the
// replacement add at most the subject's length each.
func checkGsub(L *lua.LState, max int) {
	s := L.CheckString(1)
	matches := len(s) + 1
	if n := L.OptInt(4, -1); n >= 0 && n < matches {
		matches = n
	}
	var bound int
	switch r := L.Get(3).(type) {
	case lua.LString:
		captures := strings.Count(string(r), "%")
		bound = len(s) + matches*len(r) + captures*len(s)
		if len(r) > 0 && matches > max/len(r) {
			bound = max + 1
		}
	case *lua.LTable:
		longest := 0
		r.ForEach(func(_, v lua.LValue) {
			if s, ok := v.(lua.LString); ok && len(s) > longest {
				longest = len(s)
			} else if _, ok := v.(lua.LNumber); ok && longest < 32 {
				longest = 32
			}
		})
		bound = len(s) + matches*longest
		if longest > 0 && matches > max/longest {
			bound = max + 1
		}
	default:
		return // functions run Lua code per match, within the limits
	}
	tooLong(L, "string.gsub", bound, max)
}

func checkConcat(L *lua.LState, max int) {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	n := t.Len()
	i, j := L.OptInt(3, 1), L.OptInt(4, n)
	i, j = maxInt(i, 1), minInt(j, n)
	total := 0
	for k := i; k <= j; k++ {
		switch v := t.RawGetInt(k).(type) {
		case lua.LString:
			total += len(v)
		case lua.LNumber:
			total += 32
		}
		if k < j {
			total += len(sep)
		}
		if total > max {
			break
		}
	}
	tooLong(L, "table.concat", total, max)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// os.time([t]): now, or the local time described by table t, in seconds
// since the epoch.
func osTime(L *lua.LState) int {
	if L.GetTop() == 0 || L.Get(1) == lua.LNil {
		L.Push(lua.LNumber(time.Now().Unix()))
		return 1
	}
	t := L.CheckTable(1)
	field := func(name string, def int) int {
		switch v := t.RawGetString(name).(type) {
		case lua.LNumber:
			return int(v)
		case lua.LString:
			var n int
			if _, err := fmt.Sscan(string(v), &n); err == nil {
				return n
			}
		}
		if def < 0 {
			L.RaiseError("field '%s' missing in date table", name)
		}
		return def
	}
	d := time.Date(field("year", -1), time.Month(field("month", -1)), field("day", -1),
		field("hour", 12), field("min", 0), field("sec", 0), 0, time.Local)
	L.Push(lua.LNumber(d.Unix()))
	return 1
}

func osDifftime(L *lua.LState) int {
	L.Push(lua.LNumber(L.CheckNumber(1) - L.OptNumber(2, 0)))
	return 1
}

// os.date([format [, time]]) as in Lua 5.1: "!" formats in UTC, "*t"
// returns a table, other text is strftime(3)-like.
func osDate(L *lua.LState, max int) int {
	format := L.OptString(1, "%c")
	t := time.Now()
	if L.GetTop() >= 2 {
		t = time.Unix(L.CheckInt64(2), 0)
	}
	if strings.HasPrefix(format, "!") {
		format = format[1:]
		t = t.UTC()
	} else {
		t = t.Local()
	}
	if strings.HasPrefix(format, "*t") {
		tb := L.NewTable()
		for k, v := range map[string]int{
			"year": t.Year(), "month": int(t.Month()), "day": t.Day(), "hour": t.Hour(),
			"min": t.Minute(), "sec": t.Second(), "wday": int(t.Weekday()) + 1, "yday": t.YearDay(),
		} {
			tb.RawSetString(k, lua.LNumber(v))
		}
		tb.RawSetString("isdst", lua.LBool(t.IsDST()))
		L.Push(tb)
		return 1
	}
	tooLong(L, "os.date", len(format)*32, max)
	L.Push(lua.LString(strftime(t, format)))
	return 1
}

var strftimeLayouts = map[byte]string{
	'a': "Mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': "Mon Jan  2 15:04:05 2006",
	'd': "02", 'D': "01/02/06", 'e': "_2", 'F': "2006-01-02", 'h': "Jan", 'H': "15", 'I': "03",
	'm': "01", 'M': "04", 'p': "PM", 'S': "05", 'T': "15:04:05", 'x': "01/02/06", 'X': "15:04:05",
	'y': "06", 'Y': "2006", 'z': "-0700", 'Z': "MST",
}

func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := format[i]; d {
		case '%':
			b.WriteByte('%')
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		default:
			if layout, ok := strftimeLayouts[d]; ok {
				b.WriteString(t.Format(layout))
			} else {
				b.WriteByte('%')
				b.WriteByte(d)
			}
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
