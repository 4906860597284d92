package requests

import (
	"math"
	"math/big"
	"math/bits"
)

// Long decimals (Python writes 17 significant digits: 0.009222841717985375)
// are most of a bench result, and strconv.ParseFloat spent most of its time
// re-scanning them. parseLong scans once and converts with the algorithm
// strconv uses first (Eisel–Lemire), which is exact whenever it answers;
// when it cannot, strconv decides.

// pow10Lo..pow10Hi are the powers of ten parseLong converts with.
const (
	pow10Lo = -40
	pow10Hi = 40
)

// pow10Mant holds 10^e scaled into [2^127, 2^128), rounded down, as
// {high, low} 64 bits: strconv's table, for the exponents decimals in a
// benchmark have.
var pow10Mant = func() (t [pow10Hi - pow10Lo + 1][2]uint64) {
	ten := big.NewInt(10)
	for e := pow10Lo; e <= pow10Hi; e++ {
		var d *big.Int
		if e >= 0 {
			d = new(big.Int).Exp(ten, big.NewInt(int64(e)), nil)
			if n := d.BitLen(); n <= 128 {
				d.Lsh(d, uint(128-n))
			} else {
				d.Rsh(d, uint(n-128))
			}
		} else {
			// 2^(127+b) / 10^-e, 10^-e of b bits: in [2^127, 2^128).
			den := new(big.Int).Exp(ten, big.NewInt(int64(-e)), nil)
			d = new(big.Int).Lsh(big.NewInt(1), uint(127+den.BitLen()))
			d.Quo(d, den)
		}
		lo := new(big.Int).SetUint64(math.MaxUint64)
		lo.And(lo, d)
		t[e-pow10Lo] = [2]uint64{new(big.Int).Rsh(d, 64).Uint64(), lo.Uint64()}
	}
	return t
}()

// parseLong reads a JSON number without exponent (the tokenizer checked its
// syntax); ok is false when it cannot tell the correctly rounded value.
func parseLong(tok []byte) (f float64, ok bool) {
	i, neg := 0, false
	if tok[0] == '-' {
		i, neg = 1, true
	}
	var man uint64
	nd, exp10 := 0, 0
	for ; i < len(tok) && tok[i] != '.'; i++ {
		if nd > 0 || tok[i] != '0' {
			man = man*10 + uint64(tok[i]-'0')
			nd++
		}
	}
	if i < len(tok) { // the fraction
		i++
		exp10 = i - len(tok)
		if nd == 0 {
			for i < len(tok) && tok[i] == '0' {
				i++
			}
		}
		nd += len(tok) - i
		for ; i < len(tok); i++ {
			man = man*10 + uint64(tok[i]-'0')
		}
	}
	if nd > 19 {
		return 0, false // more digits than a uint64 holds
	}
	return eiselLemire64(man, exp10, neg)
}

// eiselLemire64 is strconv's (internal/strconv/atofeisel.go, BSD licence),
// over pow10Mant.
func eiselLemire64(man uint64, exp10 int, neg bool) (f float64, ok bool) {
	if man == 0 {
		if neg {
			f = math.Copysign(0, -1)
		}
		return f, true
	}
	if exp10 < pow10Lo || exp10 > pow10Hi {
		return 0, false
	}
	pow := pow10Mant[exp10-pow10Lo]
	// Normalization.
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64(1+(exp10*108853)>>15+63+1023) - uint64(clz)
	// Multiplication.
	xHi, xLo := bits.Mul64(man, pow[0])
	// Wider approximation.
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pow[1])
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}
	// Shifting to 54 bits.
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb
	// Half-way ambiguity.
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false
	}
	// From 54 to 53 bits.
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	if retExp2-1 >= 0x7FF-1 { // subnormal, infinite or NaN
		return 0, false
	}
	retBits := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		retBits |= 1 << 63
	}
	return math.Float64frombits(retBits), true
}
