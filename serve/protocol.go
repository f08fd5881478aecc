package serve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/pipeline"
)

// The framed protocol of docs/PROTOCOL.md. Every message, either way, is
//
//	u32 length   bytes after this field (HeaderSize-4 + len(payload))
//	u8  op       OpEpochInfo, OpNextBatch, ... (the Op constants)
//	u8  status   StatusOK in requests (any other is refused); StatusOK, StatusError or StatusEnd in replies
//	u32 id       chosen by the client, echoed in the reply
//	payload
//
// all integers little-endian.

// Protocol is the protocol version reported by epoch_info. Version 2 added
// the minibatch flags byte (semantics, edge ids), the semantics byte of
// next_batch and sample requests, and splits. Version 3 added link
// minibatches (minibatch flag bit 2, the link section) and link_split;
// a server sets the bit only in link mode or for a link split, so node
// clients of version 2 read everything else as before. Version 4 added
// heterogeneous minibatches (flag bit 3, heteroproto.go) and epoch_info's
// "hetero" schema, sent only by a heterogeneous server.
const Protocol = 4

// HeaderSize is the size of a frame's header, the length field included.
const HeaderSize = 10

// DefaultMaxRequest caps a request frame (a sample request of 16M seeds).
const DefaultMaxRequest = 64 << 20

// DefaultMaxInflight is the default budget for all requests and replies in
// flight at once, over all connections (Config.MaxInflight).
const DefaultMaxInflight = 256 << 20

// MaxToken is the longest token a hello request may carry, in bytes.
const MaxToken = 1024

// MaxReply caps a reply frame a client accepts.
const MaxReply = 1 << 30

// Opcodes.
const (
	OpEpochInfo  uint8 = 1  // → JSON object (see EpochInfo)
	OpNextBatch  uint8 = 2  // u32 epoch → Blocks, or StatusEnd with u32 epoch
	OpSample     uint8 = 3  // u32 epoch, array seeds (u32) → Blocks
	OpAdvance    uint8 = 4  // u32 epoch to leave → JSON object of the new epoch
	OpHello      uint8 = 5  // the token (raw bytes) → empty; the first request where a token is required
	OpMapRows    uint8 = 6  // empty → empty; from then on feature rows travel in shared memory (Unix sockets)
	OpSplit      uint8 = 7  // u32 batch size, array nodes (u32) → JSON object (see SplitInfo)
	OpSplitBatch uint8 = 8  // u32 split, u32 index[, u8 semantics] → Blocks, or StatusEnd with u32 split
	OpWalks      uint8 = 9  // walk configuration, array starts (u32) → 2-D i32 array [walks, length+1]
	OpDropSplit  uint8 = 10 // u32 split → empty; the split's id is unknown from then on
	// OpSampleFresh: u64 seed, u32 epoch, u8 flags, array fanouts (i32),
	// array seeds (u32)[, u8 semantics] → Blocks sampled by random reads,
	// without a prepared epoch (fresh.go).
	OpSampleFresh uint8 = 11
)

// DefaultSemantics in a request means the server's semantics: the
// request's semantics byte is left out.
const DefaultSemantics epoch.Semantics = 0xFF

// Statuses.
const (
	StatusOK    uint8 = 0
	StatusError uint8 = 1 // payload: u16 code, UTF-8 message
	StatusEnd   uint8 = 2 // next_batch: the epoch's minibatches are all handed out; payload u32 epoch
)

// CurrentEpoch in an epoch field means "whatever epoch is current".
const CurrentEpoch = pipeline.CurrentEpoch

// NoBatch is the batch index of Blocks answering a sample request.
const NoBatch = -1

// Error codes of a StatusError reply.
const (
	CodeBadRequest    uint16 = 1 // malformed payload
	CodeUnknownOp     uint16 = 2
	CodeUnknownEpoch  uint16 = 3 // neither the current epoch nor a prepared next one
	CodeNotInFrontier uint16 = 4 // a seed is not a training node of this epoch's shard
	CodeEpochNotDone  uint16 = 5 // next_batch for epoch e+1 while epoch e has batches left
	CodeInternal      uint16 = 6 // preparing the epoch failed
	CodeShuttingDown  uint16 = 7
	CodeTooLarge      uint16 = 8 // the request exceeds the server's cap; the connection is closed
	CodeDuplicateSeed uint16 = 9
	CodeUnauthorized  uint16 = 10 // the first request is not a hello with the server's token; the connection is closed
	CodeOverBudget    uint16 = 11 // the request's reply could exceed the connection's share of the in-flight budget
	CodeUnknownSplit  uint16 = 12 // split_batch or drop_split names a split the server does not have
	CodeTimedOut      uint16 = 13 // a walks request ran past the server's bound (--walk-timeout) and was stopped
)

// Minibatch flags, the byte after a minibatch's hop count.
const (
	batchPyG     uint8 = 1 << 0 // the hops have PyG semantics (otherwise DGL's)
	batchEdgeIDs uint8 = 1 << 1 // each hop's arrays end with e_id (i64)
)

// Array dtypes.
const (
	DtypeU32 uint8 = 1
	DtypeI32 uint8 = 2
	DtypeI64 uint8 = 3
	DtypeU64 uint8 = 4
	DtypeF32 uint8 = 5
	DtypeF16 uint8 = 6
	DtypeI8  uint8 = 7
	DtypeU8  uint8 = 8
)

// dtypeSizes is each dtype's element size (0: unknown dtype).
var dtypeSizes = [...]int{DtypeU32: 4, DtypeI32: 4, DtypeI64: 8, DtypeU64: 8, DtypeF32: 4, DtypeF16: 2, DtypeI8: 1, DtypeU8: 1}

func dtypeSize(dt uint8) int {
	if int(dt) < len(dtypeSizes) {
		return dtypeSizes[dt]
	}
	return 0
}

// Features are a minibatch's feature rows and its seeds' labels, as a
// next_batch or sample reply of a server with a feature store carries
// them after the hops.
type Features struct {
	// X holds the rows of the nodes of the blocks (the last hop's src, in
	// order), Dim elements of DType each, little-endian.
	X     []byte
	Dim   int
	DType uint8 // DtypeF32, DtypeF16, DtypeI8 or DtypeU8
	// Shared, on a connection that asked with OpMapRows, says where X
	// travels instead of the reply: in a buffer shared with the client.
	// The reply carries x's header and Shared, not x's bytes.
	Shared *SharedRows
	// Y holds the seeds' labels (-1: none); nil when the store has no
	// labels.
	Y []int32
	// lease, when set, is the shared buffer X is in (a reply for a
	// shared-rows connection, whose rows were read straight into it).
	lease *rowLease
}

// SharedRows locates a reply's rows in a connection's shared buffers
// (docs/PROTOCOL.md): buffer Buffer (whose memory file comes with the
// first reply that uses it), from byte Offset; and Retire, a buffer the
// client may unmap as the server has dropped it (NoBuffer: none).
type SharedRows struct {
	Buffer uint32
	Offset uint64
	Retire uint32
}

// NoBuffer is SharedRows.Retire when no buffer is retired.
const NoBuffer = ^uint32(0)

// Feature flags, the byte before a reply's feature arrays.
const (
	featureX      uint8 = 1 << 0 // array x follows
	featureY      uint8 = 1 << 1 // array y follows
	featureShared uint8 = 1 << 2 // x's bytes are in a shared buffer (SharedRows after its header), not in the reply
)

// sharedRowsSize is SharedRows on the wire: buffer u32, offset u64,
// retire u32.
const sharedRowsSize = 16

// featuresHeaderSize bounds the header bytes a reply's features add:
// the flags, x's 2-D header (and where shared, its location) and y's
// header.
const featuresHeaderSize = 1 + (2 + 16) + sharedRowsSize + arrayHeaderSize

var (
	// ErrFrameTooLarge is returned by ReadFrame for a frame over the cap.
	ErrFrameTooLarge = errors.New("serve: frame too large")
	// ErrMalformed is wrapped by every decoding error of a frame or payload.
	ErrMalformed = errors.New("serve: malformed message")
)

// Frame is one decoded message.
type Frame struct {
	Op      uint8
	Status  uint8
	ID      uint32
	Payload []byte
}

// ReadFrame reads one frame. A length below HeaderSize-4 is malformed; one
// above max (counting the whole frame) is ErrFrameTooLarge, and the body is
// not read. buf is reused when large enough.
func ReadFrame(r io.Reader, max int, buf []byte) (Frame, []byte, error) {
	f, plen, err := readHeader(r, max)
	if err != nil {
		return f, buf, err
	}
	if cap(buf) < plen {
		buf = make([]byte, plen)
	}
	buf = buf[:plen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return Frame{}, buf, unexpected(err)
	}
	f.Payload = buf
	return f, buf, nil
}

// readHeader reads a frame's header and returns it (no payload) with the
// payload's length, which is left unread: the server reserves the bytes a
// request will hold before it reads them. Errors are ReadFrame's.
func readHeader(r io.Reader, max int) (Frame, int, error) {
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:4]); err != nil {
		return Frame{}, 0, err // io.EOF between frames: a clean close
	}
	n := binary.LittleEndian.Uint32(h[:4])
	if n < HeaderSize-4 {
		return Frame{}, 0, fmt.Errorf("%w: frame length %d, want at least %d", ErrMalformed, n, HeaderSize-4)
	}
	if uint64(n)+4 > uint64(max) {
		return Frame{}, 0, fmt.Errorf("%w: %d bytes, cap %d", ErrFrameTooLarge, uint64(n)+4, max)
	}
	if _, err := io.ReadFull(r, h[4:]); err != nil {
		return Frame{}, 0, unexpected(err)
	}
	return Frame{Op: h[4], Status: h[5], ID: binary.LittleEndian.Uint32(h[6:])}, int(n) - (HeaderSize - 4), nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendHeader appends a frame header for a payload of plen bytes.
func AppendHeader(dst []byte, op, status uint8, id uint32, plen int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(HeaderSize-4+plen))
	dst = append(dst, op, status)
	return binary.LittleEndian.AppendUint32(dst, id)
}

// AppendFrame appends a whole frame.
func AppendFrame(dst []byte, op, status uint8, id uint32, payload []byte) []byte {
	return append(AppendHeader(dst, op, status, id, len(payload)), payload...)
}

// arrayHeaderSize is the header of a 1-D array: dtype, ndim, u64 shape.
const arrayHeaderSize = 2 + 8

func appendArrayHeader(dst []byte, dtype uint8, n int) []byte {
	dst = append(dst, dtype, 1)
	return binary.LittleEndian.AppendUint64(dst, uint64(n))
}

// blocksWriter lays out a Blocks reply as a vector of buffers: small
// headers interleaved with the arrays' own memory, so that a large
// minibatch is written with one writev and no copy.
type blocksWriter struct {
	hdr  []byte
	bufs net.Buffers
	mark int // start of the pending header bytes in hdr
	size int
}

func (w *blocksWriter) flushHeader() {
	if len(w.hdr) > w.mark {
		w.bufs = append(w.bufs, w.hdr[w.mark:len(w.hdr):len(w.hdr)])
		w.mark = len(w.hdr)
	}
}

func (w *blocksWriter) u32s(a []uint32) {
	w.hdr = appendArrayHeader(w.hdr, DtypeU32, len(a))
	w.size += arrayHeaderSize + 4*len(a)
	if !hostorder.LittleEndian {
		for _, v := range a {
			w.hdr = binary.LittleEndian.AppendUint32(w.hdr, v)
		}
		return
	}
	if len(a) > 0 {
		w.flushHeader()
		w.bufs = append(w.bufs, hostorder.Bytes(a))
	}
}

func (w *blocksWriter) i64s(a []int64) {
	w.hdr = appendArrayHeader(w.hdr, DtypeI64, len(a))
	w.size += arrayHeaderSize + 8*len(a)
	if !hostorder.LittleEndian {
		for _, v := range a {
			w.hdr = binary.LittleEndian.AppendUint64(w.hdr, uint64(v))
		}
		return
	}
	if len(a) > 0 {
		w.flushHeader()
		w.bufs = append(w.bufs, hostorder.Bytes(a))
	}
}

func (w *blocksWriter) i32s(a []int32) {
	w.hdr = appendArrayHeader(w.hdr, DtypeI32, len(a))
	w.size += arrayHeaderSize + 4*len(a)
	if !hostorder.LittleEndian {
		for _, v := range a {
			w.hdr = binary.LittleEndian.AppendUint32(w.hdr, uint32(v))
		}
		return
	}
	if len(a) > 0 {
		w.flushHeader()
		w.bufs = append(w.bufs, hostorder.Bytes(a))
	}
}

// EncodeBlocks lays out a Blocks reply frame (header included) for request
// id as buffers ready for a vectored write. batch is the minibatch's index
// in its epoch, or NoBatch for a sample reply. The buffers alias b's
// arrays.
func EncodeBlocks(op uint8, id uint32, b *epoch.Blocks, batch int) net.Buffers {
	return EncodeBatch(op, id, b, batch, nil)
}

// EncodeBatch is EncodeBlocks with the minibatch's features after the hops
// (f nil: none, the reply of a server without a feature store). The
// buffers alias f's arrays too.
func EncodeBatch(op uint8, id uint32, b *epoch.Blocks, batch int, f *Features) net.Buffers {
	return EncodeLinkBatch(op, id, b, batch, f, nil)
}

// EncodeLinkBatch is EncodeBatch for a link minibatch: its link fields
// (link; nil: a node minibatch) follow the last hop, flag bit 2 set.
func EncodeLinkBatch(op uint8, id uint32, b *epoch.Blocks, batch int, f *Features, link *epoch.LinkFields) net.Buffers {
	// The headers never reallocate hdr (sized up front), so the buffers
	// taken from it stay valid.
	w := &blocksWriter{hdr: make([]byte, HeaderSize, HeaderSize+10+arrayHeaderSize*(1+5*len(b.Hops))+featuresHeaderSize+linkFixedSize+6*(arrayHeaderSize+8))}
	w.mark = HeaderSize
	w.bufs = append(w.bufs, w.hdr[:HeaderSize])
	w.hdr = binary.LittleEndian.AppendUint32(w.hdr, b.Epoch)
	w.hdr = binary.LittleEndian.AppendUint32(w.hdr, uint32(int32(batch)))
	var flags uint8
	if b.Semantics == epoch.PyG {
		flags |= batchPyG
	}
	eids := b.HasEdgeIDs()
	if eids {
		flags |= batchEdgeIDs
	}
	if link != nil {
		flags |= batchLink
	}
	w.hdr = append(w.hdr, uint8(len(b.Hops)), flags)
	w.size = 10
	w.u32s(b.Seeds)
	for i := range b.Hops {
		h := &b.Hops[i]
		w.u32s(h.Dst)
		w.u32s(h.Src)
		w.i32s(h.EdgeSrc)
		w.i32s(h.EdgeDst)
		if eids {
			w.i64s(h.EdgeIDs)
		}
	}
	if link != nil {
		w.link(link)
	}
	if f != nil {
		flags := featureX
		if f.Y != nil {
			flags |= featureY
		}
		if f.Shared != nil {
			flags |= featureShared
		}
		rows := 0
		if f.Dim > 0 {
			rows = len(f.X) / (f.Dim * dtypeSize(f.DType))
		}
		w.hdr = append(w.hdr, flags, f.DType, 2)
		w.hdr = binary.LittleEndian.AppendUint64(w.hdr, uint64(rows))
		w.hdr = binary.LittleEndian.AppendUint64(w.hdr, uint64(f.Dim))
		w.size += 1 + 2 + 16
		if s := f.Shared; s != nil {
			// x's bytes are in the shared buffer.
			w.hdr = binary.LittleEndian.AppendUint32(w.hdr, s.Buffer)
			w.hdr = binary.LittleEndian.AppendUint64(w.hdr, s.Offset)
			w.hdr = binary.LittleEndian.AppendUint32(w.hdr, s.Retire)
			w.size += sharedRowsSize
		} else if w.size += len(f.X); !hostorder.LittleEndian || len(f.X) == 0 {
			w.hdr = append(w.hdr, f.X...)
		} else {
			w.flushHeader()
			w.bufs = append(w.bufs, f.X)
		}
		if f.Y != nil {
			w.i32s(f.Y)
		}
	}
	if !hostorder.LittleEndian {
		// Everything went into hdr: one buffer.
		w.bufs = net.Buffers{w.hdr}
	} else {
		w.flushHeader()
	}
	binary.LittleEndian.PutUint32(w.hdr[0:], uint32(HeaderSize-4+w.size))
	w.hdr[4], w.hdr[5] = op, StatusOK
	binary.LittleEndian.PutUint32(w.hdr[6:], id)
	return w.bufs
}

// batchFrameSize is the size of b's reply frame with xBytes of feature
// rows (and nLabels labels) in it, at least what EncodeBatch lays out,
// before it is laid out. A hop with fanout -1 (every neighbor) over
// high-degree nodes can make a minibatch larger than a client reads
// (MaxReply) or a u32 length says; the server checks this first and
// refuses such a reply rather than send it.
func batchFrameSize(b *epoch.Blocks, xBytes, nLabels int64, link *epoch.LinkFields) int64 {
	n := int64(HeaderSize+10+arrayHeaderSize) + 4*int64(len(b.Seeds))
	for i := range b.Hops {
		h := &b.Hops[i]
		n += 4*arrayHeaderSize + 4*int64(len(h.Dst)+len(h.Src)+len(h.EdgeSrc)+len(h.EdgeDst))
		if h.EdgeIDs != nil {
			n += arrayHeaderSize + 8*int64(len(h.EdgeIDs))
		}
	}
	return n + featuresHeaderSize + xBytes + arrayHeaderSize + 4*nLabels + linkSize(link)
}

// MarshalBlocks is EncodeBlocks gathered into one byte slice.
func MarshalBlocks(op uint8, id uint32, b *epoch.Blocks, batch int) []byte {
	bufs := EncodeBlocks(op, id, b, batch)
	n := 0
	for _, p := range bufs {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range bufs {
		out = append(out, p...)
	}
	return out
}

// decoder reads a payload front to back.
type decoder struct {
	p   []byte
	off int
	// shared reads a shared-rows reply's x (n bytes) from its buffer.
	shared func(s SharedRows, n int) ([]byte, error)
}

func (d *decoder) fail(what string) error {
	return fmt.Errorf("%w: %s at payload byte %d of %d", ErrMalformed, what, d.off, len(d.p))
}

func (d *decoder) u8(what string) (uint8, error) {
	if len(d.p)-d.off < 1 {
		return 0, d.fail("truncated " + what)
	}
	v := d.p[d.off]
	d.off++
	return v, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if len(d.p)-d.off < 4 {
		return 0, d.fail("truncated " + what)
	}
	v := binary.LittleEndian.Uint32(d.p[d.off:])
	d.off += 4
	return v, nil
}

// array reads a 1-D array of dtype, returning its bytes (a view).
func (d *decoder) array(what string, dtype uint8) ([]byte, error) {
	if len(d.p)-d.off < arrayHeaderSize {
		return nil, d.fail("truncated header of array " + what)
	}
	dt, nd := d.p[d.off], d.p[d.off+1]
	if dt != dtype {
		return nil, d.fail(fmt.Sprintf("array %s has dtype %d, want %d", what, dt, dtype))
	}
	if nd != 1 {
		return nil, d.fail(fmt.Sprintf("array %s has %d dimensions, want 1", what, nd))
	}
	n := binary.LittleEndian.Uint64(d.p[d.off+2:])
	d.off += arrayHeaderSize
	size := dtypeSize(dtype)
	if n > uint64(len(d.p)-d.off)/uint64(size) {
		return nil, d.fail(fmt.Sprintf("array %s of %d elements overruns the payload", what, n))
	}
	b := d.p[d.off : d.off+int(n)*size]
	d.off += int(n) * size
	return b, nil
}

func (d *decoder) u32s(what string) ([]uint32, error) {
	b, err := d.array(what, DtypeU32)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, len(b)/4)
	if hostorder.LittleEndian {
		copy(hostorder.Bytes(out), b)
		return out, nil
	}
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out, nil
}

func (d *decoder) i32s(what string) ([]int32, error) {
	b, err := d.array(what, DtypeI32)
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(b)/4)
	if hostorder.LittleEndian {
		copy(hostorder.Bytes(out), b)
		return out, nil
	}
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

func (d *decoder) i64s(what string) ([]int64, error) {
	b, err := d.array(what, DtypeI64)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(b)/8)
	if hostorder.LittleEndian {
		copy(hostorder.Bytes(out), b)
		return out, nil
	}
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}

func (d *decoder) end() error {
	if d.off != len(d.p) {
		return d.fail(fmt.Sprintf("%d trailing bytes", len(d.p)-d.off))
	}
	return nil
}

// DecodeBlocks decodes a Blocks reply payload and the batch index it
// carries (NoBatch for a sample reply); features, if the reply carries
// any, are checked and dropped.
func DecodeBlocks(p []byte) (*epoch.Blocks, int, error) {
	b, i, _, err := DecodeBatch(p)
	return b, i, err
}

// DecodeBatch decodes a minibatch reply payload: its blocks, its batch
// index and its features (nil when it carries none). The feature arrays
// are copies.
func DecodeBatch(p []byte) (*epoch.Blocks, int, *Features, error) {
	return decodeBatch(p, nil)
}

// DecodeLinkBatch is DecodeBatch that also returns a link minibatch's
// fields (nil for a node minibatch).
func DecodeLinkBatch(p []byte) (*epoch.Blocks, int, *Features, *epoch.LinkFields, error) {
	return decodeLinkBatch(p, nil)
}

// decodeBatch is DecodeBatch for a reply that may have come with a memory
// file of rows (shared, nil: none; it reads n bytes of it).
func decodeBatch(p []byte, shared func(s SharedRows, n int) ([]byte, error)) (*epoch.Blocks, int, *Features, error) {
	b, i, f, _, err := decodeLinkBatch(p, shared)
	return b, i, f, err
}

// decodeLinkBatch is decodeBatch that also returns a link minibatch's
// fields.
func decodeLinkBatch(p []byte, shared func(s SharedRows, n int) ([]byte, error)) (*epoch.Blocks, int, *Features, *epoch.LinkFields, error) {
	d := &decoder{p: p, shared: shared}
	e, err := d.u32("epoch")
	if err != nil {
		return nil, 0, nil, nil, err
	}
	bi, err := d.u32("batch index")
	if err != nil {
		return nil, 0, nil, nil, err
	}
	nh, err := d.u8("hop count")
	if err != nil {
		return nil, 0, nil, nil, err
	}
	flags, err := d.u8("minibatch flags")
	if err != nil {
		return nil, 0, nil, nil, err
	}
	if flags&^(batchPyG|batchEdgeIDs|batchLink) != 0 {
		return nil, 0, nil, nil, d.fail(fmt.Sprintf("minibatch flags %#x", flags))
	}
	if flags&batchEdgeIDs != 0 && nh == 0 {
		// Edge ids travel in the hops: a minibatch without hops has
		// nowhere to carry them, and EncodeBatch never sets the flag on
		// one (epoch.Blocks.HasEdgeIDs), so accepting it would decode two
		// payloads to the same blocks.
		d.off--
		return nil, 0, nil, nil, d.fail("minibatch flags say e_id but there are no hops")
	}
	b := &epoch.Blocks{Epoch: e, Hops: make([]epoch.Hop, nh)}
	if flags&batchPyG != 0 {
		b.Semantics = epoch.PyG
	}
	if b.Seeds, err = d.u32s("seeds"); err != nil {
		return nil, 0, nil, nil, err
	}
	for i := range b.Hops {
		h := &b.Hops[i]
		name := fmt.Sprintf("hop %d ", i+1)
		if h.Dst, err = d.u32s(name + "dst"); err != nil {
			return nil, 0, nil, nil, err
		}
		if h.Src, err = d.u32s(name + "src"); err != nil {
			return nil, 0, nil, nil, err
		}
		if h.EdgeSrc, err = d.i32s(name + "edge_src"); err != nil {
			return nil, 0, nil, nil, err
		}
		if h.EdgeDst, err = d.i32s(name + "edge_dst"); err != nil {
			return nil, 0, nil, nil, err
		}
		if flags&batchEdgeIDs == 0 {
			continue
		}
		if h.EdgeIDs, err = d.i64s(name + "e_id"); err != nil {
			return nil, 0, nil, nil, err
		}
		if len(h.EdgeIDs) != len(h.EdgeSrc) {
			return nil, 0, nil, nil, d.fail(fmt.Sprintf("%se_id has %d elements for %d edges", name, len(h.EdgeIDs), len(h.EdgeSrc)))
		}
	}
	var link *epoch.LinkFields
	if flags&batchLink != 0 {
		if link, err = d.link(len(b.Nodes())); err != nil {
			return nil, 0, nil, nil, err
		}
	}
	if d.off == len(p) {
		return b, int(int32(bi)), nil, link, nil
	}
	f, err := d.features(b)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	return b, int(int32(bi)), f, link, d.end()
}

// features reads a reply's feature section: x, a 2-D array with one row
// per node of b's last hop, and y, the seeds' labels, as the flags say.
func (d *decoder) features(b *epoch.Blocks) (*Features, error) {
	flags, err := d.u8("feature flags")
	if err != nil {
		return nil, err
	}
	known := featureX | featureY
	if d.shared != nil {
		// featureShared comes only to a client that asked for it with
		// OpMapRows and reads the memory file passed with the reply.
		known |= featureShared
	}
	if flags&featureX == 0 || flags&^known != 0 {
		return nil, d.fail(fmt.Sprintf("feature flags %#x", flags))
	}
	if len(d.p)-d.off < 2+16 {
		return nil, d.fail("truncated header of array x")
	}
	dt, nd := d.p[d.off], d.p[d.off+1]
	size := dtypeSize(dt)
	if nd != 2 || (dt != DtypeF32 && dt != DtypeF16 && dt != DtypeI8 && dt != DtypeU8) {
		return nil, d.fail(fmt.Sprintf("array x has dtype %d and %d dimensions, want a feature dtype and 2", dt, nd))
	}
	rows := binary.LittleEndian.Uint64(d.p[d.off+2:])
	dim := binary.LittleEndian.Uint64(d.p[d.off+10:])
	d.off += 2 + 16
	nodes := b.Nodes()
	if rows != uint64(len(nodes)) {
		return nil, d.fail(fmt.Sprintf("array x has %d rows for %d nodes", rows, len(nodes)))
	}
	var f *Features
	if flags&featureShared != 0 {
		if dim == 0 || dim > 1<<24 || rows > 1<<40/dim {
			return nil, d.fail(fmt.Sprintf("shared array x of %d × %d elements", rows, dim))
		}
		if len(d.p)-d.off < sharedRowsSize {
			return nil, d.fail("truncated location of shared array x")
		}
		s := &SharedRows{Buffer: binary.LittleEndian.Uint32(d.p[d.off:]), Offset: binary.LittleEndian.Uint64(d.p[d.off+4:]), Retire: binary.LittleEndian.Uint32(d.p[d.off+12:])}
		d.off += sharedRowsSize
		x, err := d.shared(*s, int(rows*dim)*size)
		if err != nil {
			return nil, d.fail("shared array x: " + err.Error())
		}
		f = &Features{X: x, Dim: int(dim), DType: dt, Shared: s}
	} else {
		if dim == 0 || dim > 1<<24 || rows*dim > uint64(len(d.p)-d.off)/uint64(size) {
			return nil, d.fail(fmt.Sprintf("array x of %d × %d elements overruns the payload", rows, dim))
		}
		n := int(rows*dim) * size
		f = &Features{X: append([]byte(nil), d.p[d.off:d.off+n]...), Dim: int(dim), DType: dt}
		d.off += n
	}
	if flags&featureY != 0 {
		if f.Y, err = d.i32s("y"); err != nil {
			return nil, err
		}
		if len(f.Y) != len(b.Seeds) {
			return nil, d.fail(fmt.Sprintf("array y has %d labels for %d seeds", len(f.Y), len(b.Seeds)))
		}
	}
	return f, nil
}

// AppendEpochRequest appends the payload of next_batch (with the server's
// semantics) or advance.
func AppendEpochRequest(dst []byte, e uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, e)
}

// AppendBatchRequest appends the payload of next_batch with the given
// semantics (DefaultSemantics: the server's).
func AppendBatchRequest(dst []byte, e uint32, sem epoch.Semantics) []byte {
	return appendSemantics(binary.LittleEndian.AppendUint32(dst, e), sem)
}

// DecodeBatchRequest decodes a next_batch payload: the epoch and the
// semantics asked for (DefaultSemantics when the byte is left out).
func DecodeBatchRequest(p []byte) (uint32, epoch.Semantics, error) {
	d := &decoder{p: p}
	e, err := d.u32("epoch")
	if err != nil {
		return 0, 0, err
	}
	sem, err := d.semantics()
	if err != nil {
		return 0, 0, err
	}
	return e, sem, d.end()
}

func appendSemantics(dst []byte, sem epoch.Semantics) []byte {
	if sem == DefaultSemantics {
		return dst
	}
	return append(dst, uint8(sem))
}

// semantics reads a request's optional last byte: 0 DGL, 1 PyG; none:
// DefaultSemantics.
func (d *decoder) semantics() (epoch.Semantics, error) {
	if d.off == len(d.p) {
		return DefaultSemantics, nil
	}
	v, err := d.u8("semantics")
	if err != nil {
		return 0, err
	}
	if sem := epoch.Semantics(v); sem == epoch.DGL || sem == epoch.PyG {
		return sem, nil
	}
	d.off--
	return 0, d.fail(fmt.Sprintf("semantics %d, want 0 (dgl) or 1 (pyg)", v))
}

// DecodeEpochRequest decodes a next_batch or advance payload.
func DecodeEpochRequest(p []byte) (uint32, error) {
	d := &decoder{p: p}
	e, err := d.u32("epoch")
	if err != nil {
		return 0, err
	}
	return e, d.end()
}

// AppendSampleRequest appends the payload of a sample request with the
// given semantics (DefaultSemantics: the server's).
func AppendSampleRequest(dst []byte, e uint32, seeds []uint32, sem epoch.Semantics) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, e)
	dst = appendU32s(dst, seeds)
	return appendSemantics(dst, sem)
}

func appendU32s(dst []byte, a []uint32) []byte {
	dst = appendArrayHeader(dst, DtypeU32, len(a))
	for _, v := range a {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	return dst
}

// DecodeSampleRequest decodes a sample request payload.
func DecodeSampleRequest(p []byte) (uint32, []uint32, epoch.Semantics, error) {
	d := &decoder{p: p}
	e, err := d.u32("epoch")
	if err != nil {
		return 0, nil, 0, err
	}
	seeds, err := d.u32s("seeds")
	if err != nil {
		return 0, nil, 0, err
	}
	sem, err := d.semantics()
	if err != nil {
		return 0, nil, 0, err
	}
	return e, seeds, sem, d.end()
}

// AppendSplitRequest appends the payload of a split request.
func AppendSplitRequest(dst []byte, batchSize uint32, nodes []uint32) []byte {
	return appendU32s(binary.LittleEndian.AppendUint32(dst, batchSize), nodes)
}

// DecodeSplitRequest decodes a split request payload.
func DecodeSplitRequest(p []byte) (batchSize uint32, nodes []uint32, err error) {
	d := &decoder{p: p}
	if batchSize, err = d.u32("batch size"); err != nil {
		return 0, nil, err
	}
	if nodes, err = d.u32s("nodes"); err != nil {
		return 0, nil, err
	}
	return batchSize, nodes, d.end()
}

// AppendSplitBatchRequest appends the payload of a split_batch request.
func AppendSplitBatchRequest(dst []byte, split, index uint32, sem epoch.Semantics) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, split)
	dst = binary.LittleEndian.AppendUint32(dst, index)
	return appendSemantics(dst, sem)
}

// DecodeSplitBatchRequest decodes a split_batch request payload.
func DecodeSplitBatchRequest(p []byte) (split, index uint32, sem epoch.Semantics, err error) {
	d := &decoder{p: p}
	if split, err = d.u32("split"); err != nil {
		return 0, 0, 0, err
	}
	if index, err = d.u32("index"); err != nil {
		return 0, 0, 0, err
	}
	if sem, err = d.semantics(); err != nil {
		return 0, 0, 0, err
	}
	return split, index, sem, d.end()
}

// AppendDropSplitRequest appends the payload of a drop_split request.
func AppendDropSplitRequest(dst []byte, split uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, split)
}

// DecodeDropSplitRequest decodes a drop_split request payload.
func DecodeDropSplitRequest(p []byte) (split uint32, err error) {
	d := &decoder{p: p}
	if split, err = d.u32("split"); err != nil {
		return 0, err
	}
	return split, d.end()
}

// AppendError appends an error payload.
func AppendError(dst []byte, code uint16, msg string) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, code)
	return append(dst, msg...)
}

// RemoteError is an error reply from the server.
type RemoteError struct {
	Code    uint16
	Message string
}

func (e *RemoteError) Error() string { return fmt.Sprintf("server error %d: %s", e.Code, e.Message) }

// DecodeError decodes an error payload.
func DecodeError(p []byte) *RemoteError {
	if len(p) < 2 {
		return &RemoteError{Code: CodeBadRequest, Message: "malformed error reply"}
	}
	return &RemoteError{Code: binary.LittleEndian.Uint16(p), Message: string(p[2:])}
}
