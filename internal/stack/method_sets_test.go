package stack

import (
	"go/ast"
	"path"
	"slices"
	"strings"
	"testing"
)

// maxExportedMethods is the most exported methods a product type may
// have: past it, a type does more than one job a reader can name.
const maxExportedMethods = 14

// harness reports whether the package in dir is the harness or a test
// helper, which the method limit leaves alone: internal/dev/...,
// internal/testkit and any package whose name ends in "test".
func harness(dir string) bool {
	return strings.Contains(dir+"/", "/internal/dev/") || strings.HasSuffix(dir, "/internal/testkit") ||
		strings.HasSuffix(path.Base(dir), "test")
}

// typeDecls is what one package declares about its types: each named
// type's exported methods and the types it embeds, by name.
type typeDecls struct {
	methods map[string]map[string]bool
	embeds  map[string][]string
}

// exportedMethodSets counts the exported methods of every exported type
// of the product's packages under roots, by "dir.Type": the methods
// declared on T or *T, or in T if it is an interface, and those promoted
// from the package's types that T embeds. A type embedded from another
// package is not followed: the product embeds only plain data structs of
// other packages (spend.ReconRun, a Stripe event's payload).
func exportedMethodSets(t *testing.T, roots []string) map[string][]string {
	t.Helper()
	pkgs := map[string]*typeDecls{}
	productSources(t, roots, func(file string, f *ast.File) {
		dir := path.Dir(file)
		if harness(dir) {
			return
		}
		p := pkgs[dir]
		if p == nil {
			p = &typeDecls{methods: map[string]map[string]bool{}, embeds: map[string][]string{}}
			pkgs[dir] = p
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 || !d.Name.IsExported() {
					continue
				}
				recv := typeName(d.Recv.List[0].Type)
				if p.methods[recv] == nil {
					p.methods[recv] = map[string]bool{}
				}
				p.methods[recv][d.Name.Name] = true
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if p.methods[ts.Name.Name] == nil {
						p.methods[ts.Name.Name] = map[string]bool{}
					}
					var fields *ast.FieldList
					switch x := ts.Type.(type) {
					case *ast.StructType:
						fields = x.Fields
					case *ast.InterfaceType:
						fields = x.Methods
					default:
						continue
					}
					for _, field := range fields.List {
						if len(field.Names) == 0 {
							p.embeds[ts.Name.Name] = append(p.embeds[ts.Name.Name], typeName(field.Type))
							continue
						}
						if _, ok := field.Type.(*ast.FuncType); ok {
							for _, n := range field.Names {
								if n.IsExported() {
									p.methods[ts.Name.Name][n.Name] = true
								}
							}
						}
					}
				}
			}
		}
	})
	out := map[string][]string{}
	for dir, p := range pkgs {
		for name := range p.methods {
			if !ast.IsExported(name) {
				continue
			}
			set := map[string]bool{}
			p.collect(name, set, map[string]bool{})
			out[dir+"."+name] = slices.Sorted(func(yield func(string) bool) {
				for m := range set {
					if !yield(m) {
						return
					}
				}
			})
		}
	}
	return out
}

// collect adds the exported methods of name, its own and promoted, to set.
func (p *typeDecls) collect(name string, set, seen map[string]bool) {
	if seen[name] {
		return
	}
	seen[name] = true
	for m := range p.methods[name] {
		set[m] = true
	}
	for _, e := range p.embeds[name] {
		p.collect(e, set, seen)
	}
}

// typeName returns the name of the type an expression names, without
// pointer or type parameters; "" for another package's type.
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	}
	return ""
}

// TestNoProductTypeHasMoreThan14ExportedMethods: every exported type
// outside the harness has at most maxExportedMethods exported methods,
// so each has one job a reader can name.
func TestNoProductTypeHasMoreThan14ExportedMethods(t *testing.T) {
	sets := exportedMethodSets(t, []string{"../../internal", "../../pkg", "../../cmd", "../../functions"})
	// The walk must see the spend roles, or it missed them.
	if len(sets["../../internal/spend.Workloads"]) == 0 {
		t.Fatalf("no methods found for spend.Workloads among %d types", len(sets))
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range sets {
			if !yield(n) {
				return
			}
		}
	}) {
		if n := len(sets[name]); n > maxExportedMethods {
			t.Errorf("%s has %d exported methods, more than %d: %s", strings.TrimPrefix(name, "../../"), n,
				maxExportedMethods, strings.Join(sets[name], ", "))
		}
	}
}

func TestHarnessPackages(t *testing.T) {
	for dir, want := range map[string]bool{"../../internal/dev/localrun": true, "../../internal/testkit": true,
		"../../pkg/webhook/webhooktest": true, "../../internal/spend": false, "../../internal/devices": false,
		"../../pkg/queue": false} {
		if got := harness(dir); got != want {
			t.Errorf("harness(%s) = %v, want %v", dir, got, want)
		}
	}
}
