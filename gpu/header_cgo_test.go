//go:build cgo && linux

package gpu

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestStatusCodesMatchHeader(t *testing.T) {
	h := headerConstants(t)
	if v, ok := h["SSG_ABI_VERSION"]; !ok || v != abiVersion {
		t.Errorf("SSG_ABI_VERSION = %d (defined: %v) in %s, package built against %d", v, ok, headerFile, abiVersion)
	}
	if v, ok := h["SSG_OK"]; !ok || statusError(v, "m") != nil {
		t.Errorf("SSG_OK (%d, defined: %v) is not success", v, ok)
	}
	// Every failure status of the header has its row, under its name and value.
	inGo := map[string]int{}
	for _, sc := range statusCodes {
		inGo[sc.name] = sc.code
		if v, ok := h[sc.name]; !ok || v != sc.code {
			t.Errorf("statusCodes has %s = %d; %s has %d (defined: %v)", sc.name, sc.code, headerFile, v, ok)
		}
		err := statusError(sc.code, "the library's message")
		if !errors.Is(err, sc.sentinel) || !strings.Contains(err.Error(), "the library's message") {
			t.Errorf("statusError(%s) = %v, want it to wrap %v with the message", sc.name, err, sc.sentinel)
		}
	}
	for name, v := range h {
		if strings.HasPrefix(name, "SSG_ERR_") {
			if _, ok := inGo[name]; !ok {
				t.Errorf("%s = %d in %s has no row in statusCodes", name, v, headerFile)
			}
		}
	}
	// A code this build does not know is still an error.
	if err := statusError(99, ""); !errors.Is(err, ErrCUDA) || !strings.Contains(err.Error(), "status 99") {
		t.Errorf("statusError(99) = %v, want ErrCUDA naming the status", err)
	}
}

// headerStructFields returns the fields of `typedef struct NAME {...}` in
// the header, in order, as "type name".
func headerStructFields(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(headerFile)
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)typedef struct ` + name + ` \{(.*?)\} ` + name + `;`).FindSubmatch(b)
	if body == nil {
		t.Fatalf("%s: no struct %s", headerFile, name)
	}
	var fields []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+)\s+(\w+);`).FindAllSubmatch(body[1], -1) {
		fields = append(fields, string(m[1])+" "+string(m[2]))
	}
	return fields
}

// TestOptionsMatchHeader checks that every field of ssg_options is set
// from Options, and that the struct is the seven int32_t of the header in
// its order, which bench/gpu_bench.py's ctypes mirror (Opts) assumes.
func TestOptionsMatchHeader(t *testing.T) {
	o := cOptions(Options{UVA: true, BlockSize: 2, FetchSize: 3, GroupSize: 4, BlocksPerSM: 5, Timeout: 6 * time.Millisecond, EdgeIDs: true})
	type field struct {
		decl   string
		offset uintptr
		value  int32
	}
	got := []field{
		{"int32_t uva", unsafe.Offsetof(o.uva), int32(o.uva)},
		{"int32_t block_size", unsafe.Offsetof(o.block_size), int32(o.block_size)},
		{"int32_t fetch_size", unsafe.Offsetof(o.fetch_size), int32(o.fetch_size)},
		{"int32_t group_size", unsafe.Offsetof(o.group_size), int32(o.group_size)},
		{"int32_t blocks_per_sm", unsafe.Offsetof(o.blocks_per_sm), int32(o.blocks_per_sm)},
		{"int32_t timeout_ms", unsafe.Offsetof(o.timeout_ms), int32(o.timeout_ms)},
		{"int32_t edge_ids", unsafe.Offsetof(o.edge_ids), int32(o.edge_ids) * 7}, // EdgeIDs sets 1
	}
	decls := headerStructFields(t, "ssg_options")
	var gotDecls []string
	for i, f := range got {
		gotDecls = append(gotDecls, f.decl)
		if want := uintptr(4 * i); f.offset != want {
			t.Errorf("ssg_options.%s at offset %d, want %d", f.decl, f.offset, want)
		}
		if want := int32(i + 1); f.value != want {
			t.Errorf("cOptions sets ssg_options.%s to %d, want %d", f.decl, f.value, want)
		}
	}
	if !slices.Equal(decls, gotDecls) {
		t.Errorf("%s declares ssg_options as %q; this test and cOptions know %q", headerFile, decls, gotDecls)
	}
	if size := unsafe.Sizeof(o); size != uintptr(4*len(got)) {
		t.Errorf("sizeof(ssg_options) = %d, want %d", size, 4*len(got))
	}
}
