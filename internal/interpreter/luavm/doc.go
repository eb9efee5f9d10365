// Package luavm runs the Lua scripts of Karmada's
// ResourceInterpreterCustomization (config.karmada.io/v1alpha1,
// spec.customizations.*.luaScript) unchanged, in a sandbox.
//
// # Operations
//
// Each operation loads the script, which defines a global function named
// after it, and calls that function:
//
//	GetReplicas(obj)                  -> replicas, requirements (table or nil)
//	ReviseReplica(obj, replicas)      -> obj
//	Retain(desired, observed)         -> obj
//	AggregateStatus(obj, statusItems) -> obj
//	InterpretHealth(obj)              -> boolean
//	ReflectStatus(obj)                -> status table
//	GetDependencies(obj)              -> list of {apiVersion, kind, namespace, name, labelSelector}
//
// statusItems is a list of {clusterName, status, applied, appliedMessage,
// health}, or nil when there are none (Karmada's scripts test
// `statusItems == nil`). Requirements are a ReplicaRequirements table
// (nodeClaim {nodeSelector, tolerations, hardNodeAffinity},
// resourceRequest, resourceLimits, namespace, priorityClassName); without
// a namespace they take obj's. Beyond Karmada, ReflectStatus and
// GetDependencies accept nil (no status, no dependencies), which Karmada
// refuses. A failing script, a missing function or a result of the wrong
// type is an error "luavm: <Function>: <what>", the Lua error text and
// position ("luaScript:3: ...") included; it never panics.
//
// # What a script finds
//
//   - base: assert, error, ipairs, next, pairs, pcall, select, tonumber,
//     tostring, type, unpack, xpcall, _G, _VERSION; print, which discards
//     its output; require, which gives "kube" and the libraries below
//     only. collectgarbage, dofile, getfenv, getmetatable, load,
//     loadfile, loadstring, module, newproxy, rawequal, rawget, rawset,
//     setfenv and setmetatable raise "<name> is not available in the
//     sandbox", as Karmada disables them.
//   - string: all of Lua 5.1's but dump; rep, format, gsub bounded (below).
//   - table: concat (bounded), insert, maxn, remove, sort, getn.
//   - math: all of Lua 5.1's.
//   - os: time([t]), date([format [, time]]) ("!" for UTC, "*t"),
//     difftime(t2, t1) — Karmada's safe os (time, date) plus difftime.
//   - kube, by `local kube = require("kube")` as Karmada's scripts do, or
//     as a global:
//   - kube.accuratePodRequirements(podTemplate): what one Pod of the
//     template needs, or nil if nothing: resourceRequest and
//     resourceLimits computed as the kube-scheduler does (containers
//     summed, init containers as a maximum, sidecars, pod-level
//     resources, overhead; a container's limit stands in for a request it
//     does not set, as in Karmada), nodeClaim (nodeSelector, tolerations,
//     required node affinity), priorityClassName, and namespace if the
//     template's metadata has one. Quantities are strings ("250m").
//   - kube.getPodDependencies(podTemplate, namespace): the ConfigMaps,
//     Secrets, ServiceAccount (other than "default") and
//     PersistentVolumeClaims the template's Pods use (volumes, projected
//     volumes, env, envFrom, image pull secrets, volume plugins' secret
//     references), as {apiVersion = "v1", kind, namespace, name}, sorted
//     by kind then name; namespace nil means "default"; an empty table
//     when there are none (Karmada gives nil).
//   - kube.getResourceQuantity(q): quantity string q as a number
//     ("1Gi" -> 1073741824, "250m" -> 0.25).
//   - kube.resourceAdd(q1, q2, ...): the sum of quantities (nil is 0), as
//     a quantity string.
//   - any other kube.x raises "kube.x is not a kube helper (there are
//     ...)".
//
// There is no io, package, debug, coroutine or channel library, and no
// os function but those above: no file, network, process or environment
// access.
//
// # Objects in Lua
//
// Objects go to Lua as tables: maps with string keys, lists as sequences
// 1..n, numbers as Lua numbers (float64: integers above 2^53 lose
// precision). A null field is absent in Lua and comes back null unless
// the script set it. Results come back as:
//
//   - a table with string keys: a map; keys 1..n: a list (holes, up to
//     half of it, become null); other keys, both kinds in one table,
//     functions, NaN and infinities, and cycles are errors naming the
//     path (spec.template.spec.containers[0]...);
//   - a whole number: int64 (replicas: 3 stays 3, not 3.0), unless the
//     input held a float64 at the same place; other numbers: float64;
//   - an empty table (Lua cannot tell [] from {}): the shape it had when
//     given to the script, wherever the script moved it; for a table the
//     script made, the shape the inputs have at the same place (a list
//     stays a list); failing both, an empty map inside a list or at the
//     root, and left out as a field of a map, as Karmada does.
//
// # Limits
//
// Each call runs in a fresh lua.LState within Limits:
//
//   - Time: the state's context (LState.SetContext) has the call's
//     deadline; gopher-lua checks it before every instruction, so a loop
//     ends with "script exceeded the time limit of 1s" (ErrTimeLimit),
//     even one catching errors with pcall. The caller's context also
//     stops the call. A single builtin call (sorting a huge table, say)
//     is not interrupted, but the bounds below keep builtins short.
//   - Memory: gopher-lua does not account memory, so a watchdog
//     goroutine samples the Go heap (runtime/metrics) every
//     MemoryCheckInterval and cancels the call's context with
//     ErrMemoryLimit ("script exceeded the memory limit of 64 MiB") once
//     the live heap, as the GC measured it, exceeds the heap at the
//     call's start by MaxMemory. When the heap has grown by more than
//     MaxMemory but no GC has measured it, the watchdog forces one
//     (shared by concurrent calls, at most once per half limit of
//     further growth) to tell retained memory from garbage.
//   - Stacks: CallStackSize bounds call nesting ("stack overflow") and
//     RegistryMaxSize the data stack ("registry overflow", e.g.
//     unpack of a huge range).
//   - Single steps: builtins that could build a huge value in one step
//     are bounded: string.rep, string.gsub with a string or table
//     replacement, table.concat and os.date fail beyond MaxStringBytes;
//     string.format refuses widths and precisions over two digits, as
//     Lua 5.1 does; string.dump is unavailable. The array part of a
//     table stops at 2^20 (larger integer keys are hashed), so `t[1e9] =
//     1` does not allocate a gigabyte of nils; this sets gopher-lua's
//     process-wide lua.MaxArrayIndex, this package being its only user.
//
// The memory limit is a bound on growth, not an allocator quota:
//
//   - it is process-wide: the heap of the whole process is measured, so
//     calls running at the same time, and other goroutines, count
//     towards each other's growth; a runaway script can make a call
//     running beside it fail with the memory-limit error too;
//   - the heap at the start counts garbage not yet collected, so a call
//     starting on a heap full of garbage may retain up to MaxMemory plus
//     that garbage (at most the GC's headroom, GOGC) before it is
//     stopped; it is never charged for memory it did not allocate;
//   - it is sampled: between two samples a script keeps allocating, and
//     one Lua instruction that is not bounded above, a concatenation
//     `a .. b .. c` of up to ~200 operands, may allocate that many times
//     its largest string (itself bounded by the limit) before the next
//     check. In the tests an unbounded script is stopped after growing
//     the heap by 1-2 times MaxMemory.
//
// The process should still run with a container memory limit and
// GOMEMLIMIT.
//
// # Performance
//
// A fresh state per call costs ~35µs for the state and ~100µs to open
// the libraries (BenchmarkCall/newState, on a loaded 2-core machine), a
// third of a simple InterpretHealth call; converting the object and the
// helpers' work dominate GetReplicas. A pool would save it but let one
// script's globals, overridden library functions or garbage (possibly a
// heap grown to the limit) reach the next script, of another
// customization. Compiled scripts are cached (CacheSize) and shared, as
// gopher-lua allows.
package luavm
