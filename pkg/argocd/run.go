package argocd

import (
	"context"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Result is what a health script returns, as Argo CD reads it.
type Result struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// validStatuses are the codes Argo CD accepts from a script; it turns any other into Unknown.
var validStatuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}

// scriptTimeout ends a script that never returns. Argo CD allows one second. Run serves tests,
// and one of them (TestScriptsSurviveMissingFields, thousands of runs) once hit that second on
// a 2-core machine at a load average of 5.8; the scripts themselves take microseconds.
const scriptTimeout = 10 * time.Second

// Run runs a health script the way Argo CD runs one from argocd-cm (util/lua/lua.go): no
// standard library but package, base and table (no string library), a time limit, the object
// (as JSON decodes it) as the global obj, and the returned table read as status and message. A
// status Argo CD would not accept is an error.
func Run(script []byte, obj map[string]any) (Result, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Result{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(string(script)); err != nil {
		return Result{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Result{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	r := Result{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	if !validStatuses[r.Status] {
		return r, fmt.Errorf("the script returned status %q, which Argo CD turns into Unknown", r.Status)
	}
	return r, nil
}

// toLua converts a decoded JSON (or unstructured) value as Argo CD's decodeValue does.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
