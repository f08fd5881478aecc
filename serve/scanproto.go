package serve

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/streamsampler/streamsampler/epoch"
)

// Opcodes of layer-wise inference passes (docs/PROTOCOL.md, "Full
// scans"): every node with all of its in-neighbors, in minibatches of
// consecutive node ids, by one sequential pass over the chunks.
const (
	OpScan      uint8 = 16 // u32 batch size, u8 flags, u8 semantics, UTF-8 store path → JSON object (see ScanInfo)
	OpScanBatch uint8 = 17 // u32 scan, u32 index → a minibatch, or StatusEnd with u32 scan
	OpDropScan  uint8 = 18 // u32 scan → empty; the scan's id is unknown from then on
)

// CodeUnknownScan: scan_batch or drop_scan names a scan this connection
// does not have.
const CodeUnknownScan uint16 = 16

// Flags of a scan request.
const (
	ScanRows    uint8 = 1 << 0 // every minibatch carries its nodes' feature rows (and its seeds' labels)
	ScanEdgeIDs uint8 = 1 << 1 // every minibatch carries e_id
	scanFlags         = ScanRows | ScanEdgeIDs
)

// MaxScanPath bounds a scan request's store path, in bytes.
const MaxScanPath = 4096

// ScanRequest is what a scan request asks for.
type ScanRequest struct {
	BatchSize uint32
	Flags     uint8
	Semantics epoch.Semantics // epoch.DGL or epoch.PyG (DefaultSemantics: the server's)
	// Store is the directory of the feature store the rows come from (an
	// absolute path on the server's machine, a directory of the same
	// graph: a layer's outputs); "" is the graph directory's own.
	Store string
}

// AppendScanRequest appends the payload of a scan request.
func AppendScanRequest(dst []byte, r ScanRequest) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, r.BatchSize)
	sem := uint8(r.Semantics)
	if r.Semantics == DefaultSemantics {
		sem = 0xFF
	}
	dst = append(dst, r.Flags, sem)
	return append(dst, r.Store...)
}

// DecodeScanRequest decodes a scan request payload.
func DecodeScanRequest(p []byte) (ScanRequest, error) {
	d := &decoder{p: p}
	var r ScanRequest
	var err error
	if r.BatchSize, err = d.u32("batch size"); err != nil {
		return r, err
	}
	if r.Flags, err = d.u8("flags"); err != nil {
		return r, err
	}
	if r.Flags&^scanFlags != 0 {
		return r, fmt.Errorf("%w: scan flags %#x: unknown bits %#x", ErrMalformed, r.Flags, r.Flags&^scanFlags)
	}
	sem, err := d.u8("semantics")
	if err != nil {
		return r, err
	}
	switch s := epoch.Semantics(sem); {
	case sem == 0xFF:
		r.Semantics = DefaultSemantics
	case s == epoch.DGL || s == epoch.PyG:
		r.Semantics = s
	default:
		return r, fmt.Errorf("%w: scan semantics %d, want 0 (dgl), 1 (pyg) or 255 (the server's)", ErrMalformed, sem)
	}
	path := p[d.off:]
	switch {
	case len(path) > MaxScanPath:
		return r, fmt.Errorf("%w: scan store path of %d bytes, at most %d", ErrMalformed, len(path), MaxScanPath)
	case !utf8.Valid(path):
		return r, fmt.Errorf("%w: scan store path is not UTF-8", ErrMalformed)
	}
	r.Store = string(path)
	if r.BatchSize == 0 {
		return r, fmt.Errorf("%w: scan batch size 0, want at least 1", ErrMalformed)
	}
	return r, nil
}

// AppendScanBatchRequest appends the payload of a scan_batch request.
func AppendScanBatchRequest(dst []byte, scan, index uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, scan)
	return binary.LittleEndian.AppendUint32(dst, index)
}

// DecodeScanBatchRequest decodes a scan_batch request payload.
func DecodeScanBatchRequest(p []byte) (scan, index uint32, err error) {
	d := &decoder{p: p}
	if scan, err = d.u32("scan"); err != nil {
		return 0, 0, err
	}
	if index, err = d.u32("index"); err != nil {
		return 0, 0, err
	}
	return scan, index, d.end()
}

// AppendDropScanRequest appends the payload of a drop_scan request.
func AppendDropScanRequest(dst []byte, scan uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, scan)
}

// DecodeDropScanRequest decodes a drop_scan request payload.
func DecodeDropScanRequest(p []byte) (scan uint32, err error) {
	d := &decoder{p: p}
	if scan, err = d.u32("scan"); err != nil {
		return 0, err
	}
	return scan, d.end()
}
