// Package xclbin reads and writes the parts of Xilinx's xclbin container
// (the "axlf" format of XRT's xclbin.h) that a host program needs: the
// UUID, the memory topology, the IP layout (compute units), the
// connectivity of kernel arguments to memory banks and the kernel
// signatures of the embedded XML metadata.
//
// It exists because the xclbinutil shipped with Debian's XRT is broken, so
// tests must produce a loadable xclbin themselves, and because the
// emulated SmartSSD reads the same header to learn which kernels an xclbin
// declares. A written file carries no bitstream: it loads on XRT's noop
// driver (and in the emulator), not on a real card.
package xclbin

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// Magic is the first 8 bytes of an xclbin file.
const Magic = "xclbin2\x00"

// Section kinds (enum axlf_section_kind).
const (
	KindEmbeddedMetadata = 2
	KindMemTopology      = 6
	KindConnectivity     = 7
	KindIPLayout         = 8
)

// Sizes fixed by xclbin.h's static asserts.
const (
	axlfSize          = 496 // struct axlf including one section header
	axlfFixed         = axlfSize - sectionHeaderSize
	sectionHeaderSize = 40
	memDataSize       = 40
	connectionSize    = 12
	ipDataSize        = 80
	maxSections       = 0x10000 // XCLBIN_MAX_NUM_SECTION
	headerOffset      = 8 + 4 + 28 + 256 + 8
)

// ErrFormat is wrapped by every parse error.
var ErrFormat = errors.New("xclbin: malformed file")

// MemType is enum MEM_TYPE.
type MemType uint8

// Memory types used here.
const (
	MemDDR3 MemType = 0
	MemDDR4 MemType = 1
	MemDRAM MemType = 2
	MemHBM  MemType = 6
	MemHost MemType = 10
)

// Mem is one entry of MEM_TOPOLOGY (struct mem_data): a memory bank. Its
// index in Xclbin.Mems is the memory group id XRT reports for arguments
// connected to it.
type Mem struct {
	Type        MemType
	Used        bool
	SizeKB      uint64
	BaseAddress uint64
	Tag         string // e.g. "bank0", at most 15 bytes
}

// IP types (enum IP_TYPE) and kernel IP properties.
const (
	IPKernel = 1

	IPIntEnable = 0x1 // IP_INT_ENABLE_MASK
	// IPControlHS is AP_CTRL_HS in the IP_CONTROL bits of ip_data.properties.
	IPControlHS = 0 << 8
)

// IP is one entry of IP_LAYOUT (struct ip_data). Compute units are IPs of
// type IPKernel named "kernel:instance".
type IP struct {
	Type        uint32
	Properties  uint32
	BaseAddress uint64
	Name        string // at most 63 bytes
}

// Connection is one entry of CONNECTIVITY: argument ArgIndex of the compute
// unit IPs[IPIndex] is wired to memory bank Mems[MemIndex].
type Connection struct {
	ArgIndex int32
	IPIndex  int32
	MemIndex int32
}

// Arg is a kernel argument of the XML metadata.
type Arg struct {
	Name string
	// Index is the argument position in xrtRunSetArg.
	Index int
	// AddressQualifier is 0 for a scalar, 1 for a global memory pointer.
	AddressQualifier int
	// Port is the AXI port ("S_AXI_CONTROL" for scalars, an m_axi port for pointers).
	Port string
	// Size is the register size in bytes (8 for pointers).
	Size int
	// Offset is the register offset in the control interface.
	Offset int
	// Type is the C type, e.g. "uint*", "uint", "ulong".
	Type string
}

// Kernel is a kernel of the XML metadata.
type Kernel struct {
	Name      string
	Args      []Arg
	Instances []string // compute unit names
}

// Xclbin is the parsed (or to-be-written) content of an xclbin file.
type Xclbin struct {
	UUID        [16]byte
	Platform    string // m_platformVBNV, at most 63 bytes
	TimeStamp   uint64
	Mems        []Mem
	IPs         []IP
	Connections []Connection
	Kernels     []Kernel
}

// Kernel returns the kernel called name.
func (x *Xclbin) Kernel(name string) (*Kernel, bool) {
	for i := range x.Kernels {
		if x.Kernels[i].Name == name {
			return &x.Kernels[i], true
		}
	}
	return nil, false
}

// GroupID returns the memory bank that argument arg of kernel's first
// compute unit is connected to, as xrtKernelArgGroupId does.
func (x *Xclbin) GroupID(kernel string, arg int) (int, error) {
	k, ok := x.Kernel(kernel)
	if !ok {
		return 0, fmt.Errorf("xclbin: no kernel %q", kernel)
	}
	var a *Arg
	for i := range k.Args {
		if k.Args[i].Index == arg {
			a = &k.Args[i]
		}
	}
	if a == nil {
		return 0, fmt.Errorf("xclbin: kernel %q has no argument %d", kernel, arg)
	}
	if a.AddressQualifier != 1 {
		return 0, fmt.Errorf("xclbin: argument %d (%s) of kernel %q is a scalar, not a buffer", arg, a.Name, kernel)
	}
	for ipi, ip := range x.IPs {
		if ip.Type != IPKernel || !strings.HasPrefix(ip.Name, kernel+":") {
			continue
		}
		for _, c := range x.Connections {
			if int(c.IPIndex) == ipi && int(c.ArgIndex) == arg {
				if c.MemIndex < 0 || int(c.MemIndex) >= len(x.Mems) || !x.Mems[c.MemIndex].Used {
					return 0, fmt.Errorf("xclbin: argument %d of kernel %q is connected to unused or missing bank %d", arg, kernel, c.MemIndex)
				}
				return int(c.MemIndex), nil
			}
		}
		return 0, fmt.Errorf("xclbin: argument %d of compute unit %q has no connectivity", arg, ip.Name)
	}
	return 0, fmt.Errorf("xclbin: kernel %q has no compute unit in IP_LAYOUT", kernel)
}

// ReadFile parses the xclbin at path.
func ReadFile(path string) (*Xclbin, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	x, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

func formatErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
}

// cstr returns the NUL-terminated string at the start of b.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Parse decodes an xclbin image. Sections it does not know are skipped;
// EMBEDDED_METADATA is optional (kernels are then empty).
func Parse(b []byte) (*Xclbin, error) {
	le := binary.LittleEndian
	if len(b) < axlfFixed {
		return nil, formatErr("%d bytes, shorter than the %d-byte axlf header", len(b), axlfFixed)
	}
	if string(b[:8]) != Magic {
		return nil, formatErr("magic %q, want %q", cstr(b[:8]), "xclbin2")
	}
	h := b[headerOffset:]
	length := le.Uint64(h[0:])
	if length > uint64(len(b)) {
		return nil, formatErr("header length %d exceeds file size %d", length, len(b))
	}
	x := &Xclbin{TimeStamp: le.Uint64(h[8:])}
	x.Platform = cstr(h[48:112])
	copy(x.UUID[:], h[112:128])
	nsec := le.Uint32(h[144:])
	if nsec > maxSections {
		return nil, formatErr("%d sections, more than %d", nsec, maxSections)
	}
	if uint64(axlfFixed)+uint64(nsec)*sectionHeaderSize > uint64(len(b)) {
		return nil, formatErr("%d section headers do not fit in %d bytes", nsec, len(b))
	}
	var xmlData []byte
	for i := 0; i < int(nsec); i++ {
		sh := b[axlfFixed+i*sectionHeaderSize:]
		kind := le.Uint32(sh[0:])
		off, size := le.Uint64(sh[24:]), le.Uint64(sh[32:])
		if off > uint64(len(b)) || size > uint64(len(b))-off {
			return nil, formatErr("section %d (kind %d) at offset %d size %d outside the %d-byte file", i, kind, off, size, len(b))
		}
		data := b[off : off+size]
		var err error
		switch kind {
		case KindMemTopology:
			x.Mems, err = parseMem(data)
		case KindIPLayout:
			x.IPs, err = parseIPs(data)
		case KindConnectivity:
			x.Connections, err = parseConn(data)
		case KindEmbeddedMetadata:
			xmlData = data
		}
		if err != nil {
			return nil, fmt.Errorf("section %d (kind %d): %w", i, kind, err)
		}
	}
	if xmlData != nil {
		ks, err := parseXML(xmlData)
		if err != nil {
			return nil, fmt.Errorf("EMBEDDED_METADATA: %w", err)
		}
		x.Kernels = ks
	}
	return x, nil
}

// count reads the leading int32 count of an array section and checks that
// the array fits.
func count(data []byte, elem int) (int, error) {
	if len(data) < 8 {
		return 0, formatErr("section of %d bytes has no count", len(data))
	}
	n := int32(binary.LittleEndian.Uint32(data))
	if n < 0 || int64(n)*int64(elem) > int64(len(data)-8) {
		return 0, formatErr("count %d of %d-byte entries does not fit in %d bytes", n, elem, len(data))
	}
	return int(n), nil
}

// Array sections start with an int32 count, then the entries at the
// natural alignment of the entry (8 for mem_data and ip_data, 4 for connection).
func parseMem(d []byte) ([]Mem, error) {
	n, err := count(d, memDataSize)
	if err != nil {
		return nil, err
	}
	ms := make([]Mem, n)
	for i := range ms {
		e := d[8+i*memDataSize:]
		ms[i] = Mem{Type: MemType(e[0]), Used: e[1] != 0, SizeKB: binary.LittleEndian.Uint64(e[8:]),
			BaseAddress: binary.LittleEndian.Uint64(e[16:]), Tag: cstr(e[24:40])}
	}
	return ms, nil
}

func parseIPs(d []byte) ([]IP, error) {
	n, err := count(d, ipDataSize)
	if err != nil {
		return nil, err
	}
	ips := make([]IP, n)
	for i := range ips {
		e := d[8+i*ipDataSize:]
		ips[i] = IP{Type: binary.LittleEndian.Uint32(e), Properties: binary.LittleEndian.Uint32(e[4:]),
			BaseAddress: binary.LittleEndian.Uint64(e[8:]), Name: cstr(e[16:80])}
	}
	return ips, nil
}

func parseConn(d []byte) ([]Connection, error) {
	if len(d) < 4 {
		return nil, formatErr("connectivity of %d bytes has no count", len(d))
	}
	n := int32(binary.LittleEndian.Uint32(d))
	if n < 0 || int64(n)*connectionSize > int64(len(d)-4) {
		return nil, formatErr("connectivity count %d does not fit in %d bytes", n, len(d))
	}
	cs := make([]Connection, n)
	for i := range cs {
		e := d[4+i*connectionSize:]
		cs[i] = Connection{int32(binary.LittleEndian.Uint32(e)), int32(binary.LittleEndian.Uint32(e[4:])), int32(binary.LittleEndian.Uint32(e[8:]))}
	}
	return cs, nil
}

// The XML metadata, as far as XRT's xclbin_parser reads it
// (project.platform.device.core.kernel with port, arg and instance children).
type xmlProject struct {
	XMLName  xml.Name    `xml:"project"`
	Name     string      `xml:"name,attr"`
	Platform xmlPlatform `xml:"platform"`
}

type xmlPlatform struct {
	Vendor  string    `xml:"vendor,attr"`
	BoardID string    `xml:"boardid,attr"`
	Name    string    `xml:"name,attr"`
	Device  xmlDevice `xml:"device"`
}

type xmlDevice struct {
	Name string  `xml:"name,attr"`
	Core xmlCore `xml:"core"`
}

type xmlCore struct {
	Name    string      `xml:"name,attr"`
	Target  string      `xml:"target,attr"`
	Type    string      `xml:"type,attr"`
	Kernels []xmlKernel `xml:"kernel"`
}

type xmlKernel struct {
	Name      string        `xml:"name,attr"`
	Language  string        `xml:"language,attr"`
	VLNV      string        `xml:"vlnv,attr"`
	Protocol  string        `xml:"hwControlProtocol,attr"`
	Ports     []xmlPort     `xml:"port"`
	Args      []xmlArg      `xml:"arg"`
	Instances []xmlInstance `xml:"instance"`
}

type xmlPort struct {
	Name      string `xml:"name,attr"`
	Mode      string `xml:"mode,attr"`
	Range     string `xml:"range,attr"`
	DataWidth string `xml:"dataWidth,attr"`
	PortType  string `xml:"portType,attr"`
	Base      string `xml:"base,attr"`
}

type xmlArg struct {
	Name             string `xml:"name,attr"`
	AddressQualifier int    `xml:"addressQualifier,attr"`
	ID               string `xml:"id,attr"`
	Port             string `xml:"port,attr"`
	Size             string `xml:"size,attr"`
	Offset           string `xml:"offset,attr"`
	HostOffset       string `xml:"hostOffset,attr"`
	HostSize         string `xml:"hostSize,attr"`
	Type             string `xml:"type,attr"`
}

type xmlInstance struct {
	Name  string     `xml:"name,attr"`
	Remap []xmlRemap `xml:"addrRemap"`
}

type xmlRemap struct {
	Base  string `xml:"base,attr"`
	Range string `xml:"range,attr"`
	Port  string `xml:"port,attr"`
}

func parseNum(s, what string) (int, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || v < 0 || v > 1<<40 {
		return 0, formatErr("%s %q is not a non-negative number", what, s)
	}
	return int(v), nil
}

func parseXML(data []byte) ([]Kernel, error) {
	data = bytes.TrimRight(data, "\x00")
	var p xmlProject
	if err := xml.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var ks []Kernel
	for _, xk := range p.Platform.Device.Core.Kernels {
		k := Kernel{Name: xk.Name}
		if k.Name == "" {
			return nil, formatErr("kernel without a name")
		}
		for _, xa := range xk.Args {
			var a Arg
			var err error
			a.Name, a.Port, a.Type, a.AddressQualifier = xa.Name, xa.Port, xa.Type, xa.AddressQualifier
			if a.Index, err = parseNum(xa.ID, "arg id"); err != nil {
				return nil, fmt.Errorf("kernel %s arg %q: %w", k.Name, xa.Name, err)
			}
			if a.Size, err = parseNum(xa.Size, "arg size"); err != nil {
				return nil, fmt.Errorf("kernel %s arg %q: %w", k.Name, xa.Name, err)
			}
			if a.Offset, err = parseNum(xa.Offset, "arg offset"); err != nil {
				return nil, fmt.Errorf("kernel %s arg %q: %w", k.Name, xa.Name, err)
			}
			k.Args = append(k.Args, a)
		}
		for _, in := range xk.Instances {
			k.Instances = append(k.Instances, in.Name)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func putStr(dst []byte, s, what string) error {
	if len(s) >= len(dst) {
		return fmt.Errorf("xclbin: %s %q longer than %d bytes", what, s, len(dst)-1)
	}
	copy(dst, s)
	return nil
}

// MarshalBinary encodes x as an xclbin image with the sections
// MEM_TOPOLOGY, IP_LAYOUT, CONNECTIVITY and EMBEDDED_METADATA (the XML
// XRT reads kernel signatures from). Every compute unit gets an AXI-lite
// control port of 64 KiB at its IP base address.
func (x *Xclbin) MarshalBinary() ([]byte, error) {
	le := binary.LittleEndian
	// Section payloads.
	mem := make([]byte, 8+len(x.Mems)*memDataSize)
	le.PutUint32(mem, uint32(len(x.Mems)))
	for i, m := range x.Mems {
		e := mem[8+i*memDataSize:]
		e[0] = byte(m.Type)
		if m.Used {
			e[1] = 1
		}
		le.PutUint64(e[8:], m.SizeKB)
		le.PutUint64(e[16:], m.BaseAddress)
		if err := putStr(e[24:40], m.Tag, "memory tag"); err != nil {
			return nil, err
		}
	}
	ips := make([]byte, 8+len(x.IPs)*ipDataSize)
	le.PutUint32(ips, uint32(len(x.IPs)))
	for i, ip := range x.IPs {
		e := ips[8+i*ipDataSize:]
		le.PutUint32(e, ip.Type)
		le.PutUint32(e[4:], ip.Properties)
		le.PutUint64(e[8:], ip.BaseAddress)
		if err := putStr(e[16:80], ip.Name, "IP name"); err != nil {
			return nil, err
		}
	}
	conn := make([]byte, 4+len(x.Connections)*connectionSize)
	le.PutUint32(conn, uint32(len(x.Connections)))
	for i, c := range x.Connections {
		e := conn[4+i*connectionSize:]
		le.PutUint32(e, uint32(c.ArgIndex))
		le.PutUint32(e[4:], uint32(c.IPIndex))
		le.PutUint32(e[8:], uint32(c.MemIndex))
	}
	meta, err := x.marshalXML()
	if err != nil {
		return nil, err
	}
	type section struct {
		kind uint32
		name string
		data []byte
	}
	secs := []section{
		{KindMemTopology, "MEM_TOPOLOGY", mem},
		{KindIPLayout, "IP_LAYOUT", ips},
		{KindConnectivity, "CONNECTIVITY", conn},
		{KindEmbeddedMetadata, "EMBEDDED_METADA", meta},
	}
	// Header, section headers, then each payload 8-byte aligned.
	off := axlfFixed + len(secs)*sectionHeaderSize
	offs := make([]int, len(secs))
	for i, s := range secs {
		off = (off + 7) &^ 7
		offs[i] = off
		off += len(s.data)
	}
	total := (off + 7) &^ 7
	b := make([]byte, total)
	copy(b, Magic)
	le.PutUint32(b[8:], 0xffffffff) // m_signature_length = -1: unsigned
	for i := 12; i < 40; i++ {
		b[i] = 0xff // reserved, "initialized to 0xFFs"
	}
	h := b[headerOffset:]
	le.PutUint64(h[0:], uint64(total))
	le.PutUint64(h[8:], x.TimeStamp)
	h[26] = 2 // version 2.13.0: m_versionMajor, m_versionMinor
	h[27] = 13
	if err := putStr(h[48:112], x.Platform, "platform"); err != nil {
		return nil, err
	}
	copy(h[112:128], x.UUID[:])
	le.PutUint32(h[144:], uint32(len(secs)))
	for i, s := range secs {
		sh := b[axlfFixed+i*sectionHeaderSize:]
		le.PutUint32(sh, s.kind)
		copy(sh[4:20], s.name)
		le.PutUint64(sh[24:], uint64(offs[i]))
		le.PutUint64(sh[32:], uint64(len(s.data)))
		copy(b[offs[i]:], s.data)
	}
	return b, nil
}

func (x *Xclbin) marshalXML() ([]byte, error) {
	core := xmlCore{Name: "OCL_REGION_0", Target: "hw", Type: "clc_region"}
	for _, k := range x.Kernels {
		xk := xmlKernel{Name: k.Name, Language: "c", VLNV: "xilinx.com:hls:" + k.Name + ":1.0", Protocol: "ap_ctrl_hs"}
		ports := map[string]bool{}
		xk.Ports = append(xk.Ports, xmlPort{Name: "S_AXI_CONTROL", Mode: "slave", Range: "0x1000", DataWidth: "32", PortType: "addressable", Base: "0x0"})
		ports["S_AXI_CONTROL"] = true
		for _, a := range k.Args {
			if a.Port != "" && !ports[a.Port] {
				ports[a.Port] = true
				xk.Ports = append(xk.Ports, xmlPort{Name: a.Port, Mode: "master", Range: "0xFFFFFFFFFFFFFFFF", DataWidth: "32", PortType: "addressable", Base: "0x0"})
			}
			if a.Offset+a.Size > 0x1000 {
				return nil, fmt.Errorf("xclbin: kernel %s argument %s register 0x%x+%d beyond the 4 KiB control range", k.Name, a.Name, a.Offset, a.Size)
			}
			xk.Args = append(xk.Args, xmlArg{Name: a.Name, AddressQualifier: a.AddressQualifier, ID: strconv.Itoa(a.Index),
				Port: a.Port, Size: fmt.Sprintf("0x%x", a.Size), Offset: fmt.Sprintf("0x%x", a.Offset),
				HostOffset: "0x0", HostSize: fmt.Sprintf("0x%x", a.Size), Type: a.Type})
		}
		for _, in := range k.Instances {
			xi := xmlInstance{Name: in}
			for _, ip := range x.IPs {
				if ip.Name == k.Name+":"+in {
					xi.Remap = append(xi.Remap, xmlRemap{Base: fmt.Sprintf("0x%x", ip.BaseAddress), Range: "0x10000", Port: "S_AXI_CONTROL"})
				}
			}
			xk.Instances = append(xk.Instances, xi)
		}
		core.Kernels = append(core.Kernels, xk)
	}
	p := xmlProject{Name: "streamsampler", Platform: xmlPlatform{Vendor: "xilinx", BoardID: "smartssd", Name: x.Platform,
		Device: xmlDevice{Name: "fpga0", Core: core}}}
	out, err := xml.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("xclbin: metadata: %w", err)
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// WriteFile writes x to path atomically and durably (temporary file,
// fsync, rename, directory fsync), with mode 0644.
func WriteFile(path string, x *Xclbin) error {
	b, err := x.MarshalBinary()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("xclbin: write %s: %w", path, err)
	}
	return nil
}
