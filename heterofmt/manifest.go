package heterofmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// FormatVersion is the hetero.json version this package writes and the
// only one it reads.
const FormatVersion = 1

// File and directory names inside a heterogeneous graph directory.
const (
	// ManifestFile ties the directory together; written last.
	ManifestFile = "hetero.json"
	// RelationsDir holds one chunkfmt graph directory per relation.
	RelationsDir = "relations"
	// FeaturesDir holds one feature store per node type that has one,
	// FeaturesDir/<type>/ (package featstore).
	FeaturesDir = "features"
	// Sep joins a canonical edge type's names into its directory name,
	// as OGB's raw layout does (author___writes___paper). ValidName
	// forbids "__" inside a name and a leading or trailing "_", so the
	// joined name splits back in exactly one way.
	Sep = "___"
)

// MaxNameLen bounds a node type's or relation's name (a path component).
const MaxNameLen = 64

var (
	// ErrNoManifest means a directory has no hetero.json: it is not a
	// heterogeneous graph, or its build never finished.
	ErrNoManifest = errors.New("heterofmt: no hetero.json (not a heterogeneous graph directory, or its build never finished)")
	// ErrBadManifest means hetero.json exists but is not a valid manifest
	// of this version (malformed, edited, inconsistent).
	ErrBadManifest = errors.New("heterofmt: invalid hetero.json")
	// ErrMismatch means a relation's directory is not the graph hetero.json
	// records (another graph copied in, a relation rebuilt on its own),
	// or disagrees with its node types' counts.
	ErrMismatch = errors.New("heterofmt: relation does not match hetero.json")
	// ErrCorrupt is matched by every *DefectError.
	ErrCorrupt = errors.New("heterofmt: corrupt heterogeneous graph")
)

// NodeType is one node type: its nodes have the local ids 0..Count-1 in
// every relation that touches it and in its feature store.
type NodeType struct {
	Name  string `json:"name"`
	Count uint32 `json:"count"`
}

// Relation is one canonical edge type (Src, Rel, Dst), stored as the
// chunkfmt graph directory Dir (relative to the heterogeneous directory)
// of in-edges: row v, a local id of Dst, lists the local ids of the Src
// nodes u of its edges (u, v). The relation's manifest.json has num_nodes
// = max(count(Src), count(Dst)), so that every neighbor id is below it as
// chunkfmt requires; rows count(Dst) and above are empty.
type Relation struct {
	Src string `json:"src"`
	Rel string `json:"rel"`
	Dst string `json:"dst"`
	Dir string `json:"dir"`
	// ReverseOf, when set, is the key (Key) of the relation this one was
	// derived from by reversing every edge (chunkify build --add-reverse);
	// informational.
	ReverseOf string `json:"reverse_of,omitempty"`
	// Graph is the fingerprint of Dir's manifest.json when hetero.json
	// was written.
	Graph chunkfmt.Fingerprint `json:"graph"`
}

// Key is the relation's canonical name, src___rel___dst.
func (r *Relation) Key() string { return Key(r.Src, r.Rel, r.Dst) }

// String renders the triple as PyG writes an edge type.
func (r *Relation) String() string { return fmt.Sprintf("(%s, %s, %s)", r.Src, r.Rel, r.Dst) }

// Key joins a canonical edge type's names with Sep.
func Key(src, rel, dst string) string { return src + Sep + rel + Sep + dst }

// RelationDir is the directory of relation (src, rel, dst), relative to
// the heterogeneous graph directory (always with forward slashes).
func RelationDir(src, rel, dst string) string { return RelationsDir + "/" + Key(src, rel, dst) }

// FeatureDir is the feature store directory of node type t, relative to
// the heterogeneous graph directory.
func FeatureDir(t string) string { return FeaturesDir + "/" + t }

// ValidName checks a node type's or relation's name: 1 to MaxNameLen
// ASCII letters, digits, '_', '-' and '.', not starting with '.', '-'
// or '_', not ending with '_', and without "__", so that it is a safe
// path component and Key splits back in one way.
func ValidName(s string) error {
	if s == "" || len(s) > MaxNameLen {
		return fmt.Errorf("name %q: want 1 to %d characters", s, MaxNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return fmt.Errorf("name %q: character %q at %d: want letters, digits, '_', '-' or '.'", s, c, i)
		}
	}
	switch {
	case s[0] == '.' || s[0] == '-' || s[0] == '_':
		return fmt.Errorf("name %q: must not start with %q", s, s[0])
	case s[len(s)-1] == '_':
		return fmt.Errorf("name %q: must not end with '_' (names are joined with %q)", s, Sep)
	case strings.Contains(s, "__"):
		return fmt.Errorf("name %q: must not contain \"__\" (names are joined with %q)", s, Sep)
	}
	return nil
}

// SplitKey splits src___rel___dst into its names, each checked.
func SplitKey(key string) (src, rel, dst string, err error) {
	parts := strings.Split(key, Sep)
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%q: want SRC%sREL%sDST", key, Sep, Sep)
	}
	for _, p := range parts {
		if err := ValidName(p); err != nil {
			return "", "", "", fmt.Errorf("%q: %w", key, err)
		}
	}
	return parts[0], parts[1], parts[2], nil
}

// Manifest is the content of hetero.json.
type Manifest struct {
	Version   int        `json:"version"`
	NodeTypes []NodeType `json:"node_types"` // in a fixed order: the order of node type ids
	Relations []Relation `json:"relations"`  // in a fixed order: the order of relation ids
	CreatedBy string     `json:"created_by,omitempty"`
	// Checksum is the CRC-32C of the other fields' canonical encoding
	// (crc32c.OfJSON with Checksum 0): an edit that keeps the manifest
	// consistent (two counts swapped) is refused.
	Checksum uint32 `json:"checksum"`
}

// ComputeChecksum is the manifest's checksum: the CRC-32C of its encoding
// with Checksum zero.
func (m Manifest) ComputeChecksum() uint32 {
	m.Checksum = 0
	return crc32c.OfJSON(m)
}

// NodeType returns the index of node type name, or -1.
func (m *Manifest) NodeType(name string) int {
	for i := range m.NodeTypes {
		if m.NodeTypes[i].Name == name {
			return i
		}
	}
	return -1
}

// Count is the number of nodes of type name (0 for an unknown type).
func (m *Manifest) Count(name string) uint32 {
	if i := m.NodeType(name); i >= 0 {
		return m.NodeTypes[i].Count
	}
	return 0
}

// Relation returns the index of relation (src, rel, dst), or -1.
func (m *Manifest) Relation(src, rel, dst string) int {
	for i := range m.Relations {
		r := &m.Relations[i]
		if r.Src == src && r.Rel == rel && r.Dst == dst {
			return i
		}
	}
	return -1
}

// RelationRows is the num_nodes of relation r's chunkfmt graph:
// max(count(src), count(dst)).
func (m *Manifest) RelationRows(r *Relation) uint32 { return max(m.Count(r.Src), m.Count(r.Dst)) }

// NumEdges is the number of stored edges over all relations.
func (m *Manifest) NumEdges() uint64 {
	var n uint64
	for _, r := range m.Relations {
		n += r.Graph.NumEdges
	}
	return n
}

// NodeTypeFingerprint is the chunkfmt.Fingerprint the feature store of
// node type name is bound to (featstore.Options.Graph, featstore.OpenFor):
// NumNodes its count, NumEdges and Chunks the totals over every relation,
// ChunkCRCs a CRC-32C of the type's name and every relation's key and
// fingerprint. A store is therefore refused beside another graph or a
// rebuilt one (featstore.ErrGraphMismatch), as a homogeneous store is.
func (m *Manifest) NodeTypeFingerprint(name string) (chunkfmt.Fingerprint, bool) {
	i := m.NodeType(name)
	if i < 0 {
		return chunkfmt.Fingerprint{}, false
	}
	type rel struct {
		Key   string               `json:"key"`
		Graph chunkfmt.Fingerprint `json:"graph"`
	}
	id := struct {
		Type      string `json:"type"`
		Relations []rel  `json:"relations"`
	}{Type: name}
	fp := chunkfmt.Fingerprint{NumNodes: m.NodeTypes[i].Count}
	for _, r := range m.Relations {
		id.Relations = append(id.Relations, rel{r.Key(), r.Graph})
		fp.NumEdges += r.Graph.NumEdges
		fp.Chunks += r.Graph.Chunks
	}
	fp.ChunkCRCs = crc32c.OfJSON(id)
	return fp, true
}

// Validate checks the manifest's consistency: version, names, node types
// unique and within chunkfmt.MaxNodes, relations over known types, unique,
// in their canonical directories, with fingerprints whose num_nodes is
// max(count(src), count(dst)). The checksum is Parse's to check. Errors
// name the field.
func (m *Manifest) Validate() error {
	if m.Version != FormatVersion {
		return fmt.Errorf("version %d: this reader supports version %d", m.Version, FormatVersion)
	}
	if len(m.NodeTypes) == 0 {
		return errors.New("node_types: empty; a heterogeneous graph has at least one node type")
	}
	seen := map[string]bool{}
	for i, t := range m.NodeTypes {
		if err := ValidName(t.Name); err != nil {
			return fmt.Errorf("node_types[%d]: %w", i, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("node_types[%d]: %q given twice", i, t.Name)
		}
		seen[t.Name] = true
		if t.Count > chunkfmt.MaxNodes {
			return fmt.Errorf("node_types[%d] %q: count %d: more than the maximum %d", i, t.Name, t.Count, chunkfmt.MaxNodes)
		}
	}
	if len(m.Relations) == 0 {
		return errors.New("relations: empty; a heterogeneous graph has at least one relation")
	}
	keys := map[string]bool{}
	for i := range m.Relations {
		r := &m.Relations[i]
		for _, f := range []struct{ field, v string }{{"src", r.Src}, {"rel", r.Rel}, {"dst", r.Dst}} {
			if err := ValidName(f.v); err != nil {
				return fmt.Errorf("relations[%d].%s: %w", i, f.field, err)
			}
		}
		for _, f := range []struct{ field, v string }{{"src", r.Src}, {"dst", r.Dst}} {
			if !seen[f.v] {
				return fmt.Errorf("relations[%d] %s: %s %q: no such node type", i, r, f.field, f.v)
			}
		}
		if keys[r.Key()] {
			return fmt.Errorf("relations[%d] %s: given twice", i, r)
		}
		keys[r.Key()] = true
		if want := RelationDir(r.Src, r.Rel, r.Dst); r.Dir != want {
			return fmt.Errorf("relations[%d] %s: dir %q, want %q", i, r, r.Dir, want)
		}
		if r.ReverseOf != "" {
			if _, _, _, err := SplitKey(r.ReverseOf); err != nil {
				return fmt.Errorf("relations[%d] %s: reverse_of: %w", i, r, err)
			}
		}
		if want := m.RelationRows(r); r.Graph.NumNodes != want {
			return fmt.Errorf("relations[%d] %s: graph.num_nodes %d, want max(count(%s), count(%s)) = %d", i, r, r.Graph.NumNodes, r.Src, r.Dst, want)
		}
	}
	return nil
}

// Parse decodes and checks the bytes of a hetero.json: its fields
// (unknown ones refused), its checksum and its consistency. Errors wrap
// ErrBadManifest.
func Parse(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrBadManifest)
	}
	if m.Version != FormatVersion {
		return nil, fmt.Errorf("%w: version %d: this reader supports version %d", ErrBadManifest, m.Version, FormatVersion)
	}
	if got := m.ComputeChecksum(); got != m.Checksum {
		return nil, fmt.Errorf("%w: checksum %d, the fields give %d: the file was edited or damaged", ErrBadManifest, m.Checksum, got)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	return &m, nil
}

// Read reads and checks dir/hetero.json. A directory without one gives
// an error wrapping ErrNoManifest, an invalid one ErrBadManifest; both
// name the file.
func Read(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoManifest, path)
	}
	if err != nil {
		return nil, fmt.Errorf("heterofmt: reading %s: %w", path, err)
	}
	m, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Is reports whether dir holds a hetero.json (valid or not): what the
// commands check to tell a heterogeneous directory from a homogeneous one.
func Is(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ManifestFile))
	return err == nil
}

// Write sets m's checksum, checks m (Validate) and writes dir/hetero.json
// atomically: a temporary file, fsynced, renamed, and the directory
// fsynced. Callers write it after every relation (and feature store) is
// complete: it is the commit point of the directory.
func Write(dir string, m *Manifest) error {
	m.Checksum = m.ComputeChecksum()
	if err := m.Validate(); err != nil {
		return fmt.Errorf("heterofmt: refusing to write an invalid %s: %w", ManifestFile, err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("heterofmt: encoding %s: %w", ManifestFile, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("heterofmt: writing %s: %w", ManifestFile, err)
	}
	return nil
}
