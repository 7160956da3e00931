package remote_test

import (
	"bytes"
	"flag"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/api.txt from the package's sources")

// TestExportedAPI pins the package's exported names and signatures, as
// internal/apicheck does for the library's packages, but from the syntax
// alone: type-checking would load NATS's sources, tens of seconds under
// -race. A deliberate change: go test ./remote -run TestExportedAPI
// -update, and a line in CHANGES.md.
func TestExportedAPI(t *testing.T) {
	bp, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var lines []string
	show := func(n any) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(".", name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				recv := ""
				if d.Recv != nil {
					recv = show(d.Recv.List[0].Type)
					if !ast.IsExported(strings.TrimPrefix(recv, "*")) {
						continue // a method of an unexported type
					}
					recv = "(" + recv + ") "
				}
				lines = append(lines, "func "+recv+d.Name.Name+strings.TrimPrefix(show(d.Type), "func"))
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								lines = append(lines, d.Tok.String()+" "+n.Name)
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							lines = append(lines, describeType(s, show)...)
						}
					}
				}
			}
		}
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "api.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
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
	}
}

// describeType lists a type, its exported fields and, for an
// interface, its methods.
func describeType(s *ast.TypeSpec, show func(any) string) []string {
	head := "type " + s.Name.Name
	if s.TypeParams != nil {
		var ps []string
		for _, f := range s.TypeParams.List {
			var names []string
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
			ps = append(ps, strings.Join(names, ", ")+" "+show(f.Type))
		}
		head += "[" + strings.Join(ps, ", ") + "]"
	}
	switch tt := s.Type.(type) {
	case *ast.StructType:
		out := []string{head + " struct"}
		for _, f := range tt.Fields.List {
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, "field "+s.Name.Name+"."+n.Name+" "+show(f.Type))
				}
			}
			if len(f.Names) == 0 {
				out = append(out, "embedded "+s.Name.Name+" "+show(f.Type))
			}
		}
		return out
	case *ast.InterfaceType:
		out := []string{head + " interface"}
		for _, m := range tt.Methods.List {
			for _, n := range m.Names {
				out = append(out, "method "+s.Name.Name+"."+n.Name+strings.TrimPrefix(show(m.Type), "func"))
			}
		}
		return out
	}
	return []string{head + " " + show(s.Type)}
}
