// Package golden is the one golden-file helper of the test suites: a shared -update flag and
// Check, which rewrites a golden file on -update and otherwise compares it with what a test
// produced, showing a structural diff for YAML and a line diff for anything else.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// Update is the -update flag: rewrite the golden files instead of comparing with them
// (`make testdata` runs every golden test with it).
var Update = flag.Bool("update", false, "rewrite the golden files under testdata instead of comparing with them")

// ignoredFields are left out of the structural diff: they change with time, not with the code.
var ignoredFields = map[string]bool{"lastTransitionTime": true}

// Check writes got to path on -update; otherwise it fails t when the file's bytes differ from
// got, showing a structural diff when both parse as YAML objects or lists, a line diff if not.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update, or make testdata)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	t.Errorf("%s differs from the test's output (-want +got); rerun with -update (or make testdata) and review the change:\n%s", path, Diff(want, got))
}

// Diff describes how got differs from want: structurally (cmp.Diff of the parsed documents,
// lastTransitionTime ignored) when both are YAML objects or lists, else line by line.
func Diff(want, got []byte) string {
	w, wok := parse(want)
	g, gok := parse(got)
	if wok && gok {
		d := cmp.Diff(w, g, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return ignoredFields[k] }))
		if d != "" {
			return d
		}
		return "same YAML structure (lastTransitionTime aside); the text differs:\n" + lineDiff(string(want), string(got))
	}
	return lineDiff(string(want), string(got))
}

// parse reads YAML as JSON values (sigs.k8s.io/yaml → JSON → any); it reports false for
// anything that is not a YAML object or list, such as plain text or a bare scalar.
func parse(b []byte) (any, bool) {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	switch v.(type) {
	case map[string]any, []any:
		return v, true
	}
	return nil, false
}

// lineDiff lists the lines that differ, at most 40 of them.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 40; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
