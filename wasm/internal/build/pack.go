package build

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
)

// Pack rewrites a module's active data segments as one passive segment in
// a compact form, plus a start function that unpacks it into memory when
// the module is instantiated, before any export can run.
//
// Why: Go's WebAssembly linker emits its static data (type descriptors, the
// function tables the runtime needs for stacks and tracebacks) as tens of
// thousands of small active segments, split wherever zeros run long, and
// each segment carries about 8 bytes of header. For the guard that is 24,000
// segments and about 180 KB of headers: a tenth of the module. Packed, a
// segment costs its gap and length as LEB128 (2-3 bytes). The memory a host
// sees when _initialize runs is byte for byte the one the segments describe:
// the unpacker copies each segment to its offset and zeroes its scratch
// space. It uses bulk memory operations (memory.init, memory.copy,
// memory.fill, data.drop), which every WebAssembly 2.0 host has and Go's
// output already needs.
func Pack(mod []byte) ([]byte, error) {
	secs, err := sectionsOf(mod)
	if err != nil {
		return nil, err
	}
	if find(secs, secStart) >= 0 {
		return nil, errors.New("pack: the module already has a start function")
	}
	importedFuncs, err := countImportedFuncs(secs)
	if err != nil {
		return nil, err
	}
	mi, di, ti, fi, ci := find(secs, secMemory), find(secs, secData), find(secs, secType), find(secs, secFunction), find(secs, secCode)
	if mi < 0 || di < 0 || ti < 0 || fi < 0 || ci < 0 {
		return nil, errors.New("pack: want memory, data, type, function and code sections")
	}
	memBytes, err := initialMemory(secs[mi].body)
	if err != nil {
		return nil, err
	}
	payload, end, err := packSegments(secs[di].body)
	if err != nil {
		return nil, err
	}
	// The packed bytes are unpacked from scratch space above the data,
	// inside the initial memory, and the scratch is zeroed afterwards.
	scratch := (uint64(end) + 0xffff) &^ 0xffff
	if scratch+uint64(len(payload)) > memBytes {
		return nil, fmt.Errorf("pack: %d packed bytes do not fit the initial memory above the data", len(payload))
	}
	typeIdx, types, err := voidType(secs[ti].body)
	if err != nil {
		return nil, err
	}
	secs[ti].body = types

	// The unpacker: one more function, of that type, with its body.
	// Section bodies share the input's memory: build new ones, never
	// append to them.
	r := reader{b: secs[fi].body}
	nFuncs := r.u32()
	funcs := appendU32(nil, nFuncs+1)
	funcs = append(funcs, secs[fi].body[r.i:]...)
	secs[fi].body = appendU32(funcs, uint32(typeIdx))
	r = reader{b: secs[ci].body}
	nBodies := r.u32()
	body := unpacker(uint32(scratch), uint32(len(payload)))
	code := appendU32(nil, nBodies+1)
	code = append(code, secs[ci].body[r.i:]...)
	code = appendU32(code, uint32(len(body)))
	secs[ci].body = append(code, body...)

	secs[di].body = append(append(appendU32(nil, 1), 1), append(appendU32(nil, uint32(len(payload))), payload...)...)
	start := section{secStart, appendU32(nil, uint32(importedFuncs)+nFuncs)}
	dataCount := section{secDataCount, appendU32(nil, 1)}
	return assemble(mod[:8], secs, start, dataCount), nil
}

// The ids of the sections Pack reads or writes.
const (
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secMemory    = 5
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// sectionsOf splits a module into its sections, in order.
func sectionsOf(mod []byte) ([]section, error) {
	if len(mod) < 8 || !bytes.Equal(mod[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, errors.New("pack: not a WebAssembly 1 module")
	}
	var secs []section
	for r := (reader{b: mod, i: 8}); r.i < len(r.b); {
		id := r.byte()
		n := r.u32()
		secs = append(secs, section{id, r.bytes(int(n))})
		if r.err != nil {
			return nil, fmt.Errorf("pack: %w", r.err)
		}
	}
	return secs, nil
}

// countImportedFuncs counts the imported functions, which come first in
// the function index space, and refuses imports Pack cannot keep.
func countImportedFuncs(secs []section) (int, error) {
	i := find(secs, secImport)
	if i < 0 {
		return 0, nil
	}
	n := 0
	r := reader{b: secs[i].body}
	for k := r.u32(); k > 0; k-- {
		r.bytes(int(r.u32())) // module
		r.bytes(int(r.u32())) // name
		switch kind := r.byte(); kind {
		case 0:
			n++
			r.u32()
		case 2:
			return 0, errors.New("pack: the module imports its memory")
		default:
			return 0, fmt.Errorf("pack: import of kind %d", kind)
		}
	}
	if r.err != nil {
		return 0, fmt.Errorf("pack: imports: %w", r.err)
	}
	return n, nil
}

// initialMemory is the size in bytes of the module's one memory.
func initialMemory(body []byte) (uint64, error) {
	r := reader{b: body}
	if r.u32() != 1 {
		return 0, errors.New("pack: want one memory")
	}
	r.byte() // limits flags
	return uint64(r.u32()) * 65536, nil
}

// packSegments reads the data section's active segments and packs them,
// in address order, as (gap, length, bytes) triples; end is where the
// last one ends.
func packSegments(body []byte) (payload []byte, end uint32, err error) {
	type segment struct {
		off  uint32
		data []byte
	}
	var segs []segment
	r := reader{b: body}
	for n := r.u32(); n > 0; n-- {
		if r.byte() != 0 || r.byte() != 0x41 { // active, memory 0, i32.const
			return nil, 0, errors.New("pack: a data segment that is not active at a constant offset")
		}
		off := r.s32()
		if r.byte() != 0x0b {
			return nil, 0, errors.New("pack: a data segment offset that is not a lone i32.const")
		}
		segs = append(segs, segment{uint32(off), r.bytes(int(r.u32()))})
	}
	if r.err != nil || r.i != len(r.b) {
		return nil, 0, errors.New("pack: malformed data section")
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].off < segs[j].off })
	for _, s := range segs {
		if s.off < end {
			return nil, 0, errors.New("pack: overlapping data segments")
		}
		payload = appendU32(payload, s.off-end)
		payload = appendU32(payload, uint32(len(s.data)))
		payload = append(payload, s.data...)
		end = s.off + uint32(len(s.data))
	}
	return payload, end, nil
}

// voidType finds the type () -> () the unpacker needs in a type section,
// or returns the section with it added; idx is its index.
func voidType(body []byte) (idx int, types []byte, err error) {
	idx = -1
	r := reader{b: body}
	nTypes := r.u32()
	for k := uint32(0); k < nTypes; k++ {
		if r.byte() != 0x60 {
			return 0, nil, errors.New("pack: malformed type section")
		}
		params := r.u32()
		r.bytes(int(params))
		results := r.u32()
		r.bytes(int(results))
		if params == 0 && results == 0 && idx < 0 {
			idx = int(k)
		}
	}
	if r.err != nil {
		return 0, nil, errors.New("pack: malformed type section")
	}
	if idx >= 0 {
		return idx, body, nil
	}
	types = appendU32(nil, nTypes+1)
	types = append(types, body[lenU32(nTypes):]...)
	return int(nTypes), append(types, 0x60, 0, 0), nil
}

// assemble writes the module: header, then secs in the order the spec
// requires, with start before the element, code and data sections and
// dataCount before code (..., export 7, start 8, element 9, data count
// 12, code 10, data 11; custom sections anywhere). A data count section
// already in secs is replaced.
func assemble(header []byte, secs []section, start, dataCount section) []byte {
	var out []section
	for _, s := range secs {
		switch {
		case s.id == secDataCount:
			continue // replaced
		case s.id == secElement || s.id == secCode || s.id == secData:
			if find(out, secStart) < 0 {
				out = append(out, start)
			}
		}
		if s.id == secCode {
			out = append(out, dataCount)
		}
		out = append(out, s)
	}
	buf := append([]byte(nil), header...)
	for _, s := range out {
		buf = append(buf, s.id)
		buf = appendU32(buf, uint32(len(s.body)))
		buf = append(buf, s.body...)
	}
	return buf
}

// section is one section of a module: its id and its contents.
type section struct {
	id   byte
	body []byte
}

// find is the index of the first section of secs with id, or -1.
func find(secs []section, id byte) int {
	for i, s := range secs {
		if s.id == id {
			return i
		}
	}
	return -1
}

// unpacker is the start function's body: memory.init the packed bytes to
// scratch, drop the segment, then for each (gap, len, bytes) advance the
// destination by gap and memory.copy len bytes, and finally zero scratch.
func unpacker(scratch, n uint32) []byte {
	const (
		src, end, dst, cnt, shift, b = 0, 1, 2, 3, 4, 5
	)
	var c []byte
	op := func(bs ...byte) { c = append(c, bs...) }
	i32 := func(v uint32) { op(0x41); c = appendS32(c, int32(v)) }
	get := func(l byte) { op(0x20, l) }
	set := func(l byte) { op(0x21, l) }
	readLEB := func() { // into cnt, from src
		i32(0)
		set(cnt)
		i32(0)
		set(shift)
		op(0x03, 0x40) // loop
		get(src)
		op(0x2d, 0, 0) // i32.load8_u
		set(b)
		get(src)
		i32(1)
		op(0x6a) // i32.add
		set(src)
		get(cnt)
		get(b)
		i32(0x7f)
		op(0x71) // i32.and
		get(shift)
		op(0x74) // i32.shl
		op(0x72) // i32.or
		set(cnt)
		get(shift)
		i32(7)
		op(0x6a)
		set(shift)
		get(b)
		i32(0x80)
		op(0x71)
		op(0x0d, 0) // br_if loop
		op(0x0b)
	}
	op(0x01, 6, 0x7f) // six i32 locals
	i32(scratch)
	i32(0)
	i32(n)
	op(0xfc, 8, 0, 0) // memory.init data 0, memory 0
	op(0xfc, 9, 0)    // data.drop 0
	i32(scratch)
	set(src)
	i32(scratch + n)
	set(end)
	i32(0)
	set(dst)
	op(0x02, 0x40, 0x03, 0x40) // block loop
	get(src)
	get(end)
	op(0x4f)    // i32.ge_u
	op(0x0d, 1) // br_if block: done
	readLEB()   // the gap
	get(dst)
	get(cnt)
	op(0x6a)
	set(dst)
	readLEB() // the length
	get(dst)
	get(src)
	get(cnt)
	op(0xfc, 10, 0, 0) // memory.copy
	get(dst)
	get(cnt)
	op(0x6a)
	set(dst)
	get(src)
	get(cnt)
	op(0x6a)
	set(src)
	op(0x0c, 0)    // br loop
	op(0x0b, 0x0b) // end loop, end block
	i32(scratch)
	i32(0)
	i32(n)
	op(0xfc, 11, 0) // memory.fill
	op(0x0b)
	return c
}

type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		r.err = errors.New("truncated")
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.i+n > len(r.b) {
		r.err = errors.New("truncated")
		r.i = len(r.b)
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i]
}

func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.err = errors.New("bad LEB128")
	return 0
}

func (r *reader) s32() int32 {
	var v int64
	shift := 0
	for {
		c := r.byte()
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return int32(v)
		}
		if shift >= 35 || r.err != nil {
			r.err = errors.New("bad LEB128")
			return 0
		}
	}
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func lenU32(v uint32) int { return len(appendU32(nil, v)) }

func appendS32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if x == 0 && c&0x40 == 0 || x == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
