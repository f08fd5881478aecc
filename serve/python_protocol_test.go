package serve

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The protocol's numbers are defined here, in this package's Go source;
// the Python client (python/streamsampler/protocol.py) and the error table
// of docs/PROTOCOL.md restate them. These tests hold the three to the same
// names and values, so a code added, renamed or renumbered on one side
// fails until the others follow.

const (
	pythonProtocol = "../python/streamsampler/protocol.py"
	protocolDoc    = "../docs/PROTOCOL.md"
)

// wireConstants returns the constants of this package's non-test sources
// whose names start with one of the prefixes, by name. They are read from
// the source, not listed by hand, so that a new constant is seen.
func wireConstants(t *testing.T, prefixes ...string) map[string]uint64 {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]uint64{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !hasAnyPrefix(id.Name, prefixes) {
						continue
					}
					if i >= len(vs.Values) {
						t.Fatalf("%s: constant %s has no explicit value; the cross-language check reads literals", fset.Position(id.Pos()), id.Name)
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.INT {
						t.Fatalf("%s: constant %s is not an integer literal", fset.Position(id.Pos()), id.Name)
					}
					v, err := strconv.ParseUint(lit.Value, 0, 64)
					if err != nil {
						t.Fatalf("%s: constant %s: %v", fset.Position(id.Pos()), id.Name, err)
					}
					out[id.Name] = v
				}
			}
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if len(s) > len(p) && strings.HasPrefix(s, p) && unicode.IsUpper(rune(s[len(p)])) {
			return true
		}
	}
	return false
}

// camelWords splits a Go name into its words: "CodeNotInFrontier" →
// [Code Not In Frontier], "StatusOK" → [Status OK], "DtypeU32" → [Dtype U32].
func camelWords(name string) []string {
	var words []string
	start := 0
	for i := 1; i < len(name); i++ {
		prev, cur := rune(name[i-1]), rune(name[i])
		if unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			words = append(words, name[start:i])
			start = i
		}
	}
	return append(words, name[start:])
}

// pythonName is the Python spelling of a Go constant: CodeNotInFrontier →
// CODE_NOT_IN_FRONTIER.
func pythonName(goName string) string {
	return strings.ToUpper(strings.Join(camelWords(goName), "_"))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the other side of the protocol: %v", err)
	}
	return string(b)
}

// compareSets reports every name that one side has and the other lacks,
// and every name whose values differ.
func compareSets(t *testing.T, what, wantSide, gotSide string, want, got map[string]uint64) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w, inWant := want[n]
		g, inGot := got[n]
		switch {
		case !inGot:
			t.Errorf("%s %s = %d is in %s but not in %s", what, n, w, wantSide, gotSide)
		case !inWant:
			t.Errorf("%s %s = %d is in %s but not in %s", what, n, g, gotSide, wantSide)
		case w != g:
			t.Errorf("%s %s is %d in %s but %d in %s", what, n, w, wantSide, g, gotSide)
		}
	}
}

func TestWireConstantsReadFromSource(t *testing.T) {
	// The source reader against the compiled constants, so that a broken
	// reader cannot make the cross-language tests vacuous.
	got := wireConstants(t, "Code", "Op", "Status", "Dtype")
	for name, want := range map[string]uint64{
		"CodeBadRequest": uint64(CodeBadRequest), "CodeDuplicateSeed": uint64(CodeDuplicateSeed),
		"OpEpochInfo": uint64(OpEpochInfo), "OpAdvance": uint64(OpAdvance),
		"StatusOK": uint64(StatusOK), "StatusEnd": uint64(StatusEnd),
		"DtypeU32": uint64(DtypeU32), "DtypeF32": uint64(DtypeF32),
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("source reader: %s = %d (found %v), want %d", name, v, ok, want)
		}
	}
	if len(got) < 9+4+3+5 {
		t.Errorf("source reader found %d constants, want at least %d: %v", len(got), 9+4+3+5, got)
	}
}

// TestPythonProtocolConstants checks python/streamsampler/protocol.py's
// CODE_*, OP_* and STATUS_* constants and its DTYPES table against the Go
// constants: the same names, the same values, none missing on either side.
func TestPythonProtocolConstants(t *testing.T) {
	src := readFile(t, pythonProtocol)
	assign := regexp.MustCompile(`(?m)^((?:CODE|OP|STATUS)_[A-Z0-9_]+)\s*=\s*(\d+)\b`)
	for _, family := range []string{"Code", "Op", "Status"} {
		want := map[string]uint64{}
		for name, v := range wireConstants(t, family) {
			want[pythonName(name)] = v
		}
		got := map[string]uint64{}
		prefix := strings.ToUpper(family) + "_"
		for _, m := range assign.FindAllStringSubmatch(src, -1) {
			if !strings.HasPrefix(m[1], prefix) {
				continue
			}
			v, err := strconv.ParseUint(m[2], 10, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", pythonProtocol, m[1], err)
			}
			got[m[1]] = v
		}
		compareSets(t, "constant", "serve/protocol.go", pythonProtocol, want, got)
	}

	// DTYPES = {1: np.dtype("<u4"), ...}: DtypeU32 is "<u4".
	want := map[string]uint64{}
	for name, v := range wireConstants(t, "Dtype") {
		kind := strings.TrimPrefix(name, "Dtype")
		bits, err := strconv.Atoi(kind[1:])
		if err != nil {
			t.Fatalf("dtype constant %s: %v", name, err)
		}
		want[strings.ToLower(kind[:1])+strconv.Itoa(bits/8)] = v
	}
	got := map[string]uint64{}
	entry := regexp.MustCompile(`(\d+):\s*np\.dtype\("<([a-z]\d+)"\)`)
	for _, m := range entry.FindAllStringSubmatch(src, -1) {
		v, _ := strconv.ParseUint(m[1], 10, 64)
		got[m[2]] = v
	}
	compareSets(t, "dtype", "serve/protocol.go", pythonProtocol+" DTYPES", want, got)
}

// TestProtocolDocConstants checks docs/PROTOCOL.md's error-code table and
// its list of ops against the Go constants.
func TestProtocolDocConstants(t *testing.T) {
	doc := readFile(t, protocolDoc)

	want := map[string]uint64{}
	for name, v := range wireConstants(t, "Code") {
		want[strings.ToLower(strings.Join(camelWords(name)[1:], " "))] = v
	}
	_, table, found := strings.Cut(doc, "An error reply (status 1)")
	if !found {
		t.Fatalf("%s: the error table's introduction %q is gone", protocolDoc, "An error reply (status 1)")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	got := map[string]uint64{}
	row := regexp.MustCompile(`(?m)^\|\s*(\d+)\s*\|\s*([a-z ]+?)\s*\|`)
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		v, _ := strconv.ParseUint(m[1], 10, 64)
		got[m[2]] = v
	}
	compareSets(t, "error code", "serve/protocol.go", protocolDoc, want, got)

	want = map[string]uint64{}
	for name, v := range wireConstants(t, "Op") {
		want[strings.ToLower(strings.Join(camelWords(name)[1:], "_"))] = v
	}
	opRow := regexp.MustCompile("(?m)^\\| 4 \\| 1 \\| `op` u8 \\|(.*)$")
	m := opRow.FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("%s: the header table's op row is gone", protocolDoc)
	}
	got = map[string]uint64{}
	for _, op := range regexp.MustCompile("(\\d+) `([a-z_]+)`").FindAllStringSubmatch(m[1], -1) {
		v, _ := strconv.ParseUint(op[1], 10, 64)
		got[op[2]] = v
	}
	compareSets(t, "op", "serve/protocol.go", protocolDoc, want, got)
}
