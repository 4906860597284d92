package requests

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// parseLong gives strconv's bits, or gives up, on long plain decimals.
func TestParseLong(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	toks := []string{"0.0000000000000000", "-0.0000000000000000", "12345678901234567890", "1234567890123456789",
		"0.30000000000000004", "9007199254740993.0", "0.000000000000000000000000000000000000001234567",
		"0.00000000000000000000000000000000000000000000001", "99999999999999999999999999999999.9",
		"179769313486231570000000000000000.0", "0.1000000000000000055511151231257827"}
	for range 300000 {
		var b strings.Builder
		if r.Intn(5) == 0 {
			b.WriteByte('-')
		}
		switch r.Intn(4) {
		case 0: // what Python writes for a gap
			fmt.Fprint(&b, r.Float64()*math.Pow(10, float64(r.Intn(8)-4)))
		case 1:
			fmt.Fprint(&b, strconv.FormatFloat(r.ExpFloat64()*1e3, 'f', -1, 64))
		default: // digits anywhere
			ints := r.Intn(22)
			if ints == 0 {
				b.WriteByte('0')
			}
			for k := range ints {
				if k == 0 {
					b.WriteByte(byte('1' + r.Intn(9)))
				} else {
					b.WriteByte(byte('0' + r.Intn(10)))
				}
			}
			if ints == 0 || r.Intn(3) > 0 {
				b.WriteByte('.')
				for range 1 + r.Intn(22) {
					b.WriteByte(byte('0' + r.Intn(10)))
				}
			}
		}
		toks = append(toks, b.String())
	}
	n := 0
	for _, tok := range toks {
		if strings.ContainsAny(tok, "eE") || len(tok) <= 16 {
			continue
		}
		if tok[0] == '0' && len(tok) > 1 && tok[1] != '.' || strings.HasPrefix(tok, "-0") && len(tok) > 2 && tok[2] != '.' {
			continue // not JSON
		}
		want, err := strconv.ParseFloat(tok, 64)
		got, ok := parseLong([]byte(tok))
		if ok {
			n++
			if err != nil || math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%s: got %v (%x), strconv %v (%x) %v", tok, got, math.Float64bits(got), want, math.Float64bits(want), err)
			}
		}
	}
	if n < 100000 {
		t.Fatalf("only %d of %d tokens converted", n, len(toks))
	}
}

// The eight-digit step reads what a digit at a time reads, and refuses any
// byte that is not a digit.
func TestEightDigits(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for range 100000 {
		var b [8]byte
		want, digits := uint64(0), true
		for k := range b {
			b[k] = byte('0' + r.Intn(10))
			if r.Intn(20) == 0 {
				b[k] = byte(r.Intn(256))
			}
			digits = digits && isDigit(b[k])
			want = want*10 + uint64(b[k]-'0')
		}
		v := binary.LittleEndian.Uint64(b[:])
		if eightDigits(v) != digits {
			t.Fatalf("%q: eightDigits %v", b, !digits)
		}
		if digits && eightDigitsValue(v) != want {
			t.Fatalf("%q: %d, want %d", b, eightDigitsValue(v), want)
		}
	}
}
