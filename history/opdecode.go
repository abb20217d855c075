package history

import (
	"math"
)

// decodeOp decodes one operation line as the writer writes it, without
// reflection: an object of the Op's own keys spelt exactly, integers
// without fraction or exponent, the two names unescaped. It reports false
// for anything else (escapes, keys of another case, null, a number out of
// its field's range, a key it does not know, trailing bytes), and the
// caller then decodes the line with encoding/json, which accepts or
// names the fault as it always did: the fast path never accepts what
// encoding/json would refuse, nor reads a value differently (FuzzDecodeOp
// holds it to that).
func decodeOp(b []byte, op *Op) bool {
	*op = Op{}
	d := opDecoder{b: b}
	d.space()
	if !d.byte('{') {
		return false
	}
	d.space()
	if d.byte('}') {
		return d.end()
	}
	for {
		d.space()
		key, ok := d.name()
		if !ok {
			return false
		}
		d.space()
		if !d.byte(':') {
			return false
		}
		d.space()
		if !d.field(key, op) {
			return false
		}
		d.space()
		if d.byte(',') {
			continue
		}
		if d.byte('}') {
			return d.end()
		}
		return false
	}
}

// opDecoder walks one line.
type opDecoder struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (d *opDecoder) space() {
	b, i := d.b, d.i
	for i < len(b) && isSpace[b[i]] {
		i++
	}
	d.i = i
}

// isSpace marks JSON's whitespace.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// byte consumes c if it is next.
func (d *opDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (d *opDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// name reads a string of plain printable ASCII, without escapes.
func (d *opDecoder) name() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	b, from := d.b, d.i
	i := from // in a local, not d.i: the loop runs in registers
	for i < len(b) && plainName[b[i]] {
		i++
	}
	if i == len(b) || b[i] != '"' {
		return nil, false // an escape, a control byte, non-ASCII, or no end
	}
	d.i = i + 1
	return b[from:i], true
}

// plainName marks the bytes a name may hold: printable ASCII but the
// quote and the backslash.
var plainName = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// int reads an integer within [lo, hi], in JSON's grammar (no leading
// zero, no plus sign), with no fraction or exponent.
func (d *opDecoder) int(lo, hi int64) (int64, bool) {
	neg := d.byte('-')
	u, ok := d.uint()
	if !ok {
		return 0, false
	}
	var v int64
	switch {
	case neg && u <= 1<<63:
		v = int64(-u) // -(1<<63) wraps to MinInt64, as it should
	case !neg && u <= math.MaxInt64:
		v = int64(u)
	default:
		return 0, false
	}
	if v < lo || v > hi {
		return 0, false
	}
	return v, true
}

// uint reads the digits of a non-negative integer that fits a uint64,
// in JSON's grammar, with no fraction or exponent.
func (d *opDecoder) uint() (uint64, bool) {
	b, from := d.b, d.i
	i := from // in a local, not d.i: the loop runs in registers
	var u uint64
	for i < len(b) {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		u = u*10 + uint64(c) // cannot wrap within maxDigits digits
		i++
	}
	d.i = i
	n := i - from
	if n == 0 || (n > 1 && d.b[from] == '0') {
		return 0, false
	}
	if n > maxDigits {
		var ok bool
		if u, ok = wideUint(d.b[from:d.i]); !ok {
			return 0, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, false
	}
	return u, true
}

// maxDigits is the most decimal digits that cannot overflow a uint64
// (10^19-1 < 2^64-1).
const maxDigits = 19

// wideUint reads digits, more than maxDigits of them, reporting false if
// their value does not fit a uint64.
func wideUint(digits []byte) (uint64, bool) {
	var u uint64
	for _, ch := range digits {
		c := uint64(ch - '0')
		if u > (math.MaxUint64-c)/10 {
			return 0, false
		}
		u = u*10 + c
	}
	return u, true
}

// bool reads true or false.
func (d *opDecoder) bool() (bool, bool) {
	for _, w := range [...]struct {
		lit string
		v   bool
	}{{"true", true}, {"false", false}} {
		if len(d.b)-d.i >= len(w.lit) && string(d.b[d.i:d.i+len(w.lit)]) == w.lit {
			d.i += len(w.lit)
			return w.v, true
		}
	}
	return false, false
}

// enum reads a name of names, returning its index.
func (d *opDecoder) enum(names []string) (int, bool) {
	s, ok := d.name()
	if !ok {
		return 0, false
	}
	for i, n := range names {
		if n == string(s) {
			return i, true
		}
	}
	return 0, false
}

// field reads the value of key into op.
func (d *opDecoder) field(key []byte, op *Op) bool {
	var at *int64
	switch string(key) {
	case "client":
		return intField(d, &op.Client, math.MinInt32, math.MaxInt32)
	case "attempt":
		return intField(d, &op.Attempt, math.MinInt16, math.MaxInt16)
	case "node":
		return intField(d, &op.Node, math.MinInt16, math.MaxInt16)
	case "item":
		return intField(d, &op.Item, math.MinInt32, math.MaxInt32)
	case "stock":
		at = &op.Stock
	case "arrival":
		at = &op.Arrival
	case "start":
		at = &op.Start
	case "acquire_call":
		at = &op.AcquireCall
	case "acquired":
		at = &op.Acquired
	case "read_call":
		at = &op.ReadCall
	case "read_return":
		at = &op.ReadReturn
	case "write_call":
		at = &op.WriteCall
	case "write_return":
		at = &op.WriteReturn
	case "release_call":
		at = &op.ReleaseCall
	case "released":
		at = &op.Released
	case "end":
		at = &op.End
	case "crash":
		at = &op.Crash
	case "grant_call":
		at = &op.GrantCall
	case "lease_ns":
		at = &op.Lease
	case "server_lease_ns":
		at = &op.ServerLease
	case "token":
		v, ok := d.uint()
		op.Token = v
		return ok
	case "shared":
		return boolField(d, &op.Shared)
	case "lost":
		return boolField(d, &op.Lost)
	case "write":
		v, ok := d.enum(writeNames[:])
		op.Write = WriteState(v)
		return ok
	case "outcome":
		v, ok := d.enum(outcomeNames[:])
		op.Outcome = Outcome(v)
		return ok
	default:
		return false
	}
	v, ok := d.int(math.MinInt64, math.MaxInt64)
	*at = v
	return ok
}

// intField reads an integer within [lo, hi] into p.
func intField[T int16 | int32](d *opDecoder, p *T, lo, hi int64) bool {
	v, ok := d.int(lo, hi)
	*p = T(v)
	return ok
}

// boolField reads true or false into p.
func boolField(d *opDecoder, p *bool) bool {
	v, ok := d.bool()
	*p = v
	return ok
}
