package luavm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Defaults of Limits.
const (
	DefaultTimeout             = time.Second
	DefaultMaxMemory           = 64 << 20
	DefaultCallStackSize       = 200
	DefaultRegistryMaxSize     = 64 * 1024
	DefaultMemoryCheckInterval = time.Millisecond
	DefaultCacheSize           = 256

	// maxStringCap is the largest default MaxStringBytes.
	maxStringCap = 16 << 20
	// registrySize is the data stack a state starts with; it grows up to
	// Limits.RegistryMaxSize, registryGrowStep values at a time (gopher-lua
	// copies the whole stack each time).
	registrySize     = 1024
	registryGrowStep = 4096
)

// ErrTimeLimit and ErrMemoryLimit are wrapped by the errors of calls that
// a limit stopped (errors.Is).
var (
	ErrTimeLimit   = errors.New("script exceeded the time limit")
	ErrMemoryLimit = errors.New("script exceeded the memory limit")
)

// Limits per call.
type Limits struct {
	// Timeout is the wall time a call may take, loading the script and
	// converting its result included. Default 1s.
	Timeout time.Duration
	// MaxMemory is how many bytes the heap may grow by during a call.
	// Default 64 MiB. See the package documentation for how it is enforced.
	MaxMemory uint64
	// CallStackSize is the deepest Lua call nesting. Default 200.
	CallStackSize int
	// RegistryMaxSize is the largest Lua data stack, in values (16 bytes
	// each). Default 64Ki values (1 MiB).
	RegistryMaxSize int
	// MaxStringBytes is the largest string one call of string.rep,
	// string.format, string.gsub, table.concat or os.date may build.
	// Default MaxMemory/4, at most 16 MiB.
	MaxStringBytes int
	// MemoryCheckInterval is how often the heap is sampled during a call.
	// Default 1ms.
	MemoryCheckInterval time.Duration
	// CacheSize is how many compiled scripts are kept. Default 256.
	CacheSize int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxMemory == 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	if l.CallStackSize <= 0 {
		l.CallStackSize = DefaultCallStackSize
	}
	if l.RegistryMaxSize <= 0 {
		l.RegistryMaxSize = DefaultRegistryMaxSize
	}
	if l.RegistryMaxSize < registrySize {
		l.RegistryMaxSize = registrySize
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = maxStringCap
		if m := l.MaxMemory / 4; m < uint64(l.MaxStringBytes) {
			l.MaxStringBytes = int(m)
		}
	}
	if l.MemoryCheckInterval <= 0 {
		l.MemoryCheckInterval = DefaultMemoryCheckInterval
	}
	if l.CacheSize <= 0 {
		l.CacheSize = DefaultCacheSize
	}
	return l
}

// VM runs scripts. It is safe for concurrent use.
//
// Every call gets a fresh lua.LState, closed when the call returns; only
// compiled scripts (immutable *lua.FunctionProto, which gopher-lua lets
// states share) are cached. A pool of states would save the few tens of
// microseconds a state costs to open (see BenchmarkCall) but let one
// script's globals, overridden functions or leftover garbage — possibly a
// heap grown to the memory limit — leak into the next call of another
// customization; a call is dominated by converting the object anyway.
type VM struct {
	limits Limits

	mu    sync.Mutex
	cache map[[sha256.Size]byte]*lua.FunctionProto
}

// New returns a VM with the given limits; zero fields take their defaults.
func New(l Limits) *VM {
	return &VM{limits: l.withDefaults(), cache: map[[sha256.Size]byte]*lua.FunctionProto{}}
}

// Limits returns the limits in force, defaults filled in.
func (vm *VM) Limits() Limits { return vm.limits }

// chunkName names the script in Lua error positions ("luaScript:3: ...").
const chunkName = "luaScript"

// compile parses and compiles script, from the cache when it was seen.
func (vm *VM) compile(script string) (*lua.FunctionProto, error) {
	key := sha256.Sum256([]byte(script))
	vm.mu.Lock()
	p, ok := vm.cache[key]
	vm.mu.Unlock()
	if ok {
		return p, nil
	}
	chunk, err := parse.Parse(strings.NewReader(script), chunkName)
	if err != nil {
		return nil, fmt.Errorf("luaScript does not parse: %v", oneLine(err.Error()))
	}
	p, err = lua.Compile(chunk, chunkName)
	if err != nil {
		return nil, fmt.Errorf("luaScript does not compile: %v", oneLine(err.Error()))
	}
	vm.mu.Lock()
	if len(vm.cache) >= vm.limits.CacheSize {
		for k := range vm.cache { // evict any one
			delete(vm.cache, k)
			break
		}
	}
	vm.cache[key] = p
	vm.mu.Unlock()
	return p, nil
}

// Compile checks that script parses, loads within the limits and defines
// function as a global function; for a validating webhook.
func (vm *VM) Compile(script, function string) error {
	return vm.run(context.Background(), function, script, 0, nil, nil)
}

// call is one run of an operation's function.
type call struct {
	vm   *VM
	ctx  context.Context
	L    *lua.LState
	conv *converter
}

// run loads script in a fresh sandboxed state, calls its global function
// fn with the arguments args makes, nret results, and gives them to
// handle, all within the limits. args == nil only loads the script and
// checks fn is defined.
func (vm *VM) run(parent context.Context, fn, script string, nret int,
	args func(c *call) ([]lua.LValue, error), handle func(c *call, rets []lua.LValue) error) (err error) {
	if parent == nil {
		parent = context.Background()
	}
	proto, err := vm.compile(script)
	if err != nil {
		return fmt.Errorf("luavm: %s: %w", fn, err)
	}

	mctx, stopMem := context.WithCancelCause(parent)
	defer stopMem(nil)
	ctx, cancel := context.WithTimeoutCause(mctx, vm.limits.Timeout,
		fmt.Errorf("%w of %s", ErrTimeLimit, vm.limits.Timeout))
	defer cancel()
	stopWatch := vm.watchMemory(ctx, stopMem)
	defer stopWatch()

	c := &call{vm: vm, ctx: ctx, conv: newConverter(ctx)}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
		if err != nil {
			// A limit, or the caller's context, explains any error after it fired.
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			err = fmt.Errorf("luavm: %s: %w", fn, err)
		}
	}()

	c.L = vm.newState(c)
	defer c.L.Close()
	c.L.SetContext(ctx)

	c.L.Push(c.L.NewFunctionFromProto(proto))
	if err := c.L.PCall(0, 0, nil); err != nil {
		return fmt.Errorf("loading luaScript: %s", luaError(err))
	}
	f := c.L.GetGlobal(fn)
	switch f.Type() {
	case lua.LTFunction:
	case lua.LTNil:
		return fmt.Errorf("luaScript does not define the function %s", fn)
	default:
		return fmt.Errorf("luaScript defines %s as a %s, not a function", fn, f.Type())
	}
	if args == nil {
		return nil
	}
	in, err := args(c)
	if err != nil {
		return err
	}
	if err := c.L.CallByParam(lua.P{Fn: f, NRet: nret, Protect: true}, in...); err != nil {
		return errors.New(luaError(err))
	}
	rets := make([]lua.LValue, nret)
	for i := range rets {
		rets[i] = c.L.Get(i - nret)
	}
	c.L.Pop(nret)
	return handle(c, rets)
}

// luaError is the message of a Lua error without gopher-lua's traceback.
func luaError(err error) string {
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		return oneLine(ae.Object.String())
	}
	return oneLine(err.Error())
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\nstack traceback:"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
