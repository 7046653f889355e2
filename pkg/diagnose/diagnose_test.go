package diagnose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// reasonPackages hold the condition reasons kafkalink writes: every constant named Reason* in
// their non-test files is one.
var reasonPackages = []string{"../binding", "../bindingcontroller", "../gateway"}

// reasonConstants parses the packages and returns each Reason* constant's value by name.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range reasonPackages {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			collectReasons(t, f, path, found)
		}
	}
	return found
}

func collectReasons(t *testing.T, f *ast.File, path string, found map[string]string) {
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: %s is not a string literal; give it one so that this test can read it", path, name.Name)
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				found[path+":"+name.Name] = value
			}
		}
	}
}

// TestEveryReasonIsExplained fails when a reason constant has no explanation: add one to
// reasons.go whenever a controller learns a new reason.
func TestEveryReasonIsExplained(t *testing.T) {
	constants := reasonConstants(t)
	if len(constants) < 60 {
		t.Fatalf("found only %d reason constants; did the packages move? %v", len(constants), constants)
	}
	used := map[string]bool{}
	for where, reason := range constants {
		used[reason] = true
		e, ok := Explain(reason)
		if !ok {
			t.Errorf("%s = %q has no explanation in pkg/diagnose/reasons.go", where, reason)
			continue
		}
		if e.Meaning == "" || (e.Health != Healthy && e.Action == "") {
			t.Errorf("%q: an explanation needs a meaning, and an action unless healthy", reason)
		}
	}
	for _, reason := range Reasons() {
		if !used[reason] {
			t.Errorf("%q is explained but no constant has it: remove it or add the constant", reason)
		}
	}
}

// TestDocumentedReasonsAreExplained reads the reason tables of docs/binding.md and
// docs/gateway.md: a reason the docs list must be one kubectl kafkalink why can explain.
func TestDocumentedReasonsAreExplained(t *testing.T) {
	code := regexp.MustCompile("`([A-Z][A-Za-z]+)`")
	for _, doc := range []struct{ file, from, to string }{
		{"../../docs/binding.md", "## Ready reasons", "## Service Binding"},
		{"../../docs/gateway.md", "## Status and reasons", "Names are never truncated"},
	} {
		data, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		start, end := strings.Index(text, doc.from), strings.Index(text, doc.to)
		if start < 0 || end < start {
			t.Fatalf("%s: the section between %q and %q is gone", doc.file, doc.from, doc.to)
		}
		n := 0
		for _, m := range code.FindAllStringSubmatch(text[start:end], -1) {
			if _, ok := Explain(m[1]); !ok && !notReasons[m[1]] {
				t.Errorf("%s lists %s, which pkg/diagnose does not explain", doc.file, m[1])
			}
			n++
		}
		if n < 20 {
			t.Fatalf("%s: found only %d reasons in its table", doc.file, n)
		}
	}
}

// notReasons are capitalised code words of the reason tables that are not reasons.
var notReasons = map[string]bool{"PEM": true, "PKCS12": true, "JKS": true, "KafkaUser": true, "KafkaRoute": true,
	"READY": true} // a printer column
