package ingest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is how an input's (decompressed) bytes encode edges.
type Format int

const (
	// FormatAuto: .npy by magic bytes or extension, .bin32/.bin64 by
	// extension, otherwise text. Binary pairs cannot be told from text
	// reliably by content, hence the extensions or an explicit format.
	FormatAuto Format = iota
	// FormatText: one edge per line, two ids separated by blanks or a comma.
	FormatText
	// FormatBin32: little-endian uint32 pairs (src, dst).
	FormatBin32
	// FormatBin64: little-endian uint64 pairs (src, dst).
	FormatBin64
	// FormatNPY: a NumPy .npy integer array of shape (2, E) or (E, 2).
	FormatNPY
)

var formatNames = [...]string{"auto", "text", "bin32", "bin64", "npy"}

// String is the name ParseFormat accepts.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses auto|text|bin32|bin64|npy.
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if strings.EqualFold(s, n) {
			return Format(i), nil
		}
	}
	return 0, fmt.Errorf("unknown format %q: want one of auto, text, bin32, bin64, npy", s)
}

// compression of a raw input, by magic bytes.
type compression int

const (
	compNone compression = iota
	compGzip
	compZstd
)

var (
	magicGzip = []byte{0x1f, 0x8b}
	magicZstd = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicNPY  = []byte("\x93NUMPY")
)

func sniffCompression(head []byte) compression {
	switch {
	case bytes.HasPrefix(head, magicGzip):
		return compGzip
	case bytes.HasPrefix(head, magicZstd):
		return compZstd
	}
	return compNone
}

// formatByName guesses from the file name, looking through a compression
// suffix: x.bin32.zst is bin32.
func formatByName(path string) Format {
	name := strings.ToLower(filepath.Base(path))
	for _, suf := range []string{".gz", ".gzip", ".zst", ".zstd"} {
		name = strings.TrimSuffix(name, suf)
	}
	switch filepath.Ext(name) {
	case ".bin32":
		return FormatBin32
	case ".bin64":
		return FormatBin64
	case ".npy":
		return FormatNPY
	}
	return FormatAuto
}
