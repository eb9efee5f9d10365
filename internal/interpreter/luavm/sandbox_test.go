package luavm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func healthScript(body string) string {
	return "function InterpretHealth(obj)\n" + body + "\nend"
}

func TestScriptsRunInASandbox(t *testing.T) {
	cases := []struct {
		name, body, wantErr string
	}{
		{"os.execute is unavailable", `os.execute("touch /tmp/pwned") return true`, "InterpretHealth: luaScript:2: attempt to call a non-function object"},
		{"os.exit is unavailable", `os.exit(1) return true`, "attempt to call a non-function object"},
		{"os.getenv is unavailable", `return os.getenv("HOME") ~= nil`, "attempt to call a non-function object"},
		{"io is unavailable", `io.open("/etc/passwd") return true`, "attempt to index a non-table object(nil) with key 'open'"},
		{"require of a module other than kube fails", `require("os") local io = require("io") return true`, `module "io" is not available in the sandbox`},
		{"package is unavailable", `package.loadlib("x", "y") return true`, "attempt to index a non-table object(nil) with key 'loadlib'"},
		{"dofile is unavailable", `dofile("/etc/passwd") return true`, "dofile is not available in the sandbox"},
		{"loadfile is unavailable", `loadfile("/etc/passwd") return true`, "loadfile is not available in the sandbox"},
		{"loadstring is unavailable", `loadstring("return 1")() return true`, "loadstring is not available in the sandbox"},
		{"load is unavailable", `load(function() return nil end) return true`, "load is not available in the sandbox"},
		{"setmetatable is unavailable", `setmetatable({}, {}) return true`, "setmetatable is not available in the sandbox"},
		{"collectgarbage is unavailable", `collectgarbage() return true`, "collectgarbage is not available in the sandbox"},
		{"debug is unavailable", `debug.getinfo(1) return true`, "attempt to index a non-table object(nil) with key 'getinfo'"},
		{"coroutines are unavailable", `coroutine.create(function() end) return true`, "attempt to index a non-table object(nil) with key 'create'"},
		{"string.dump is unavailable", `string.dump(print) return true`, "string.dump is not available in the sandbox"},
		{"a missing kube helper is named", `kube.noSuchHelper(obj) return true`, "kube.noSuchHelper is not a kube helper (there are accuratePodRequirements, getPodDependencies, getResourceQuantity, resourceAdd)"},
		{"a bad quantity is reported", `kube.getResourceQuantity("lots") return true`, `kube.getResourceQuantity: argument #1, "lots", is not a quantity`},
		{"a helper given the wrong type says so", `kube.accuratePodRequirements("web") return true`, "kube.accuratePodRequirements: argument #1 must be a pod template table, not string"},
		{"error() text is kept", `error("replicas unknown") return true`, "InterpretHealth: luaScript:2: replicas unknown"},
		{"deep recursion overflows the call stack", `local function f(n) return 1 + f(n + 1) end return f(1) > 0`, "stack overflow"},
		// Ten million values overflow the data stack; the sampled memory
		// limit may stop the script first (the stack grows by megabytes):
		// either refusal is a clear one.
		{"unpacking a huge range overflows the data stack", `return select("#", unpack({}, 1, 10000000)) > 0`, "overflow|exceeded the memory limit"},
		{"string.rep cannot build more than the string limit", `return #string.rep("x", 1e9) > 0`, "string.rep: the result would exceed the sandbox's limit of 1048576 bytes per string"},
		{"string.rep as a method is guarded too", `return #(("xx"):rep(1e9)) > 0`, "string.rep: the result would exceed"},
		{"string.format refuses huge widths", `return #string.format("%999999d", 1) > 0`, "invalid format (width or precision too long)"},
		{"string.gsub cannot multiply a string past the limit", `local s = string.rep("x", 100000) return #s:gsub("x", s) > 0`, "string.gsub: the result would exceed"},
		{"table.concat cannot repeat a string past the limit", `local s = string.rep("x", 100000) local t = {} for i = 1, 100 do t[i] = s end return #table.concat(t) > 0`, "table.concat: the result would exceed"},
		{"returning a string is the wrong type", `return "yes"`, "InterpretHealth: InterpretHealth returned a string, want a boolean"},
		{"returning nothing is the wrong type", `return`, "InterpretHealth returned a nil, want a boolean"},
	}
	vm := New(Limits{Timeout: 5 * time.Second, MaxMemory: 4 << 20})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vm.InterpretHealth(context.Background(), healthScript(tc.body), cloneSet(t))
			// wantErr lists the acceptable messages, separated by "|".
			if err == nil || !slices.ContainsFunc(strings.Split(tc.wantErr, "|"), func(want string) bool { return strings.Contains(err.Error(), want) }) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err is not one line: %q", err)
			}
		})
	}
}

func TestAScriptWithoutTheOperationsFunctionIsAnErrorNamingIt(t *testing.T) {
	_, err := testVM().InterpretHealth(context.Background(), getReplicasScript, cloneSet(t))
	want := "luavm: InterpretHealth: luaScript does not define the function InterpretHealth"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestWhatTheSandboxAllowsWorks(t *testing.T) {
	body := `
local ok, e = pcall(function() error({code = 7}) end)
assert(not ok and e.code == 7)
print("goes nowhere")
assert(type(os.time()) == "number" and os.difftime(5, 2) == 3)
assert(select("#", 1, 2, 3) == 3 and tonumber("12") == 12 and tostring(1) == "1")
assert(require("string") == string and require("table") == table)
local t = {3, 1, 2}
table.sort(t)
assert(t[1] == 1 and #t == 3 and next({}) == nil)
assert(("abc"):upper() == "ABC" and string.find("a.b", ".", 1, true) == 2)
assert(("a b"):gsub(" ", "_") == "a_b" and math.floor(2.5) == 2)
local big = {} big[2000000] = 1
return big[2000000] == 1`
	ok, err := testVM().InterpretHealth(context.Background(), healthScript(body), cloneSet(t))
	if err != nil || !ok {
		t.Fatalf("got %v, %v", ok, err)
	}
}

func TestAnEndlessLoopEndsAtTheTimeLimit(t *testing.T) {
	cases := map[string]string{
		"a plain loop":                 `while true do end`,
		"a loop swallowing the error":  `while true do pcall(function() while true do end end) end`,
		"a loop through a Go function": `while true do string.rep("x", 10) end`,
		"a loop in the script's body":  `end while true do end function unused()`,
	}
	vm := New(Limits{Timeout: 50 * time.Millisecond})
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := vm.InterpretHealth(context.Background(), healthScript(body), cloneSet(t))
			if !errors.Is(err, ErrTimeLimit) || !strings.Contains(err.Error(), "InterpretHealth: script exceeded the time limit of 50ms") {
				t.Fatalf("err = %v, want the time limit", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestCancellingTheCallersContextStopsTheScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := New(Limits{Timeout: time.Minute}).InterpretHealth(ctx, healthScript(`while true do end`), cloneSet(t))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeLimit) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}

func TestUnboundedAllocationEndsAtTheMemoryLimit(t *testing.T) {
	cases := map[string]string{
		"strings kept in a table":    `local t = {} ; local i = 0; while true do i = i + 1; t[i] = string.rep("x", 1024) end`,
		"tables kept in a table":     `local t = {} ; local i = 0; while true do i = i + 1; t[i] = {i, i, i, i} end`,
		"a string doubling":          `local s = "x" ; local t = {}; while true do s = s .. s; t[#t + 1] = s end`,
		"keys in the hash part":      `local t = {} ; local i = 0; while true do i = i + 1; t["k" .. i] = i end`,
		"sparse keys past the array": `local t = {} ; local i = 0; while true do i = i + 1; t[2000000 + i * 7] = i end`,
	}
	vm := New(Limits{Timeout: 20 * time.Second, MaxMemory: 8 << 20})
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			// The limit counts from the heap at the start of the call,
			// garbage included: collect the previous case's.
			runtime.GC()
			_, err := vm.InterpretHealth(context.Background(), healthScript(body), cloneSet(t))
			if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), "InterpretHealth: script exceeded the memory limit of 8 MiB") {
				t.Fatalf("err = %v, want the memory limit", err)
			}
		})
	}
}

func TestAllocatingGarbageWithinTheLimitIsFine(t *testing.T) {
	body := `for i = 1, 20000 do local s = string.rep("x", 1024) end return true`
	vm := New(Limits{Timeout: 20 * time.Second, MaxMemory: 8 << 20})
	if ok, err := vm.InterpretHealth(context.Background(), healthScript(body), cloneSet(t)); err != nil || !ok {
		t.Fatalf("got %v, %v", ok, err)
	}
}

func TestCompile(t *testing.T) {
	cases := []struct {
		name, script, function, wantErr string
	}{
		{"a Karmada script compiles", getReplicasScript, "GetReplicas", ""},
		{"a syntax error is reported with its line", "function GetReplicas(obj)\n  return obj.spec.replicas +\nend", "GetReplicas",
			"luavm: GetReplicas: luaScript does not parse: luaScript line:3(column:3) near 'end':   syntax error"},
		{"the function must be defined", reviseReplicaScript, "GetReplicas", "luavm: GetReplicas: luaScript does not define the function GetReplicas"},
		{"the function must be a function", "GetReplicas = 3", "GetReplicas", "luaScript defines GetReplicas as a number, not a function"},
		{"the body must load", "error('boom')\nfunction GetReplicas() end", "GetReplicas", "loading luaScript: luaScript:1: boom"},
		{"the body must load in time", "while true do end", "GetReplicas", "time limit"},
	}
	vm := New(Limits{Timeout: 50 * time.Millisecond})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := vm.Compile(tc.script, tc.function)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v\nwant %q", err, tc.wantErr)
			}
		})
	}
}

func TestCallsAreIsolatedFromEachOther(t *testing.T) {
	vm := testVM()
	polluter := healthScript(`pairs = nil; string.rep = nil; leaked = "yes"; return true`)
	if _, err := vm.InterpretHealth(context.Background(), polluter, cloneSet(t)); err != nil {
		t.Fatal(err)
	}
	reader := healthScript(`return leaked == nil and pairs ~= nil and string.rep ~= nil`)
	if ok, err := vm.InterpretHealth(context.Background(), reader, cloneSet(t)); err != nil || !ok {
		t.Fatalf("a call saw another's globals: %v, %v", ok, err)
	}
}

func TestConcurrentCallsAreSafe(t *testing.T) {
	vm := testVM()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obj := cloneSet(t)
			for j := range 4 {
				var err error
				switch (i + j) % 4 {
				case 0:
					var n int32
					n, _, err = vm.GetReplicas(context.Background(), getReplicasScript, obj)
					if err == nil && n != 3 {
						err = fmt.Errorf("replicas %d", n)
					}
				case 1:
					_, err = vm.ReviseReplica(context.Background(), reviseReplicaScript, obj, int64(i))
				case 2:
					_, err = vm.GetDependencies(context.Background(), getDependenciesScript, obj)
				case 3:
					_, err = vm.InterpretHealth(context.Background(), healthScript(fmt.Sprintf("return %d > 0", i+1)), obj)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkCall(b *testing.B) {
	vm := New(Limits{})
	obj := cloneSet(b)
	ctx := context.Background()
	b.Run("GetReplicas", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := vm.GetReplicas(ctx, getReplicasScript, obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("InterpretHealth", func(b *testing.B) {
		for b.Loop() {
			if _, err := vm.InterpretHealth(ctx, interpretHealthScript, obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("newState", func(b *testing.B) {
		c := &call{vm: vm, ctx: ctx, conv: newConverter(ctx)}
		for b.Loop() {
			c.L = vm.newState(c)
			c.L.Close()
		}
	})
}
