package apicheck

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite testdata/api.txt from the packages")

// public lists the packages whose exported names users may rely on,
// relative to the module's root.
var public = []string{"crisp", "deadline", "future", "policy", "policy/policytest", "vclock"}

const module = "github.com/crisprt/crisp"

func TestExportedAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the public packages from source: a few seconds")
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil)
	var lines []string
	for _, rel := range public {
		pkg := load(t, fset, imp, rel)
		lines = append(lines, describe(pkg)...)
	}
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "api.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	wantSet := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	for _, l := range lines {
		if !slices.Contains(wantSet, l) {
			t.Errorf("new in the API: %s", l)
		}
	}
	for _, l := range wantSet {
		if !slices.Contains(lines, l) {
			t.Errorf("gone from the API: %s", l)
		}
	}
	t.Log("if the change is deliberate: go test ./internal/apicheck -update, and list it in CHANGES.md")
}

// load type-checks one public package from its non-test sources.
func load(t *testing.T, fset *token.FileSet, imp types.Importer, rel string) *types.Package {
	t.Helper()
	dir := filepath.Join("..", "..", filepath.FromSlash(rel))
	bp, err := build.Default.ImportDir(dir, 0) // the files this platform builds
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(module+"/"+rel, fset, files, nil)
	if err != nil {
		t.Fatalf("type-checking %s: %v", rel, err)
	}
	return pkg
}

// describe lists a package's exported names, one per line, sorted: the
// package-level objects, then each type's exported fields and the
// exported methods of T and *T, promoted ones included.
func describe(pkg *types.Package) []string {
	short := strings.TrimPrefix(pkg.Path(), module+"/")
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var out []string
	add := func(format string, args ...any) {
		out = append(out, short+": "+fmt.Sprintf(format, args...))
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func:
			add("func %s%s", name, strings.TrimPrefix(types.TypeString(obj.Type(), qual), "func"))
		case *types.Var:
			add("var %s %s", name, types.TypeString(obj.Type(), qual))
		case *types.Const:
			add("const %s %s", name, types.TypeString(obj.Type(), qual))
		case *types.TypeName:
			typ := obj.Type()
			add("type %s %s", typeHead(obj, qual), kind(typ))
			if st, ok := typ.Underlying().(*types.Struct); ok {
				for i := range st.NumFields() {
					f := st.Field(i)
					if f.Exported() {
						add("field %s.%s %s", name, f.Name(), types.TypeString(f.Type(), qual))
					}
				}
			}
			if it, ok := typ.Underlying().(*types.Interface); ok {
				for i := range it.NumMethods() {
					m := it.Method(i)
					if !m.Exported() {
						continue
					}
					add("method %s.%s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func"))
				}
				continue
			}
			if obj.IsAlias() {
				continue
			}
			ms := types.NewMethodSet(types.NewPointer(typ))
			for i := range ms.Len() {
				m := ms.At(i).Obj()
				if !m.Exported() {
					continue
				}
				sig := m.Type().(*types.Signature)
				recv := "*" + name
				if _, ptr := sig.Recv().Type().(*types.Pointer); !ptr {
					recv = name
				}
				add("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(types.TypeString(sig, qual), "func"))
			}
		}
	}
	slices.Sort(out)
	return out
}

func typeHead(obj *types.TypeName, qual types.Qualifier) string {
	named, ok := obj.Type().(*types.Named)
	if !ok || named.TypeParams().Len() == 0 {
		return obj.Name()
	}
	var b strings.Builder
	b.WriteString(obj.Name())
	b.WriteString("[")
	for i := range named.TypeParams().Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		tp := named.TypeParams().At(i)
		b.WriteString(tp.Obj().Name() + " " + types.TypeString(tp.Constraint(), qual))
	}
	b.WriteString("]")
	return b.String()
}

func kind(t types.Type) string {
	switch u := t.Underlying().(type) {
	case *types.Struct:
		return "struct"
	case *types.Interface:
		for i := range u.NumMethods() {
			if !u.Method(i).Exported() {
				return "interface (sealed: only its package implements it)"
			}
		}
		return "interface"
	default:
		return types.TypeString(u, nil)
	}
}
