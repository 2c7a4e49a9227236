package api

import (
	"strconv"
	"strings"
)

// Bounds of a Number message attribute, as SQS documents them: up to 38
// significant digits, and a magnitude between 10^-128 and 10^+126 (zero
// is allowed).
const (
	maxNumberPrecision   = 38
	maxNumberExponent    = 126
	minNumberExponent    = -128
	numberExponentClamp  = 1_000_000_000 // beyond any exponent a 1 MiB mantissa can offset
	numberExponentDigits = 9
)

// numberCheck is the outcome of checking a Number attribute's value.
type numberCheck int

const (
	numberOK numberCheck = iota
	numberSyntax
	numberRange
)

// checkNumber checks the value of a Number attribute. The syntax is a
// decimal number as Java's BigDecimal reads it, which is what SQS's
// documented precision and range describe: an optional sign, digits with at
// most one decimal point (".5" and "5." are numbers), and an optional
// exponent ("1e5", "2.5E-3"). No spaces, no hexadecimal, no Infinity/NaN.
func checkNumber(s string) numberCheck {
	rest := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if len(rest) != len(s) && len(rest) != len(s)-1 {
		return numberSyntax // "+-1"
	}
	mantissa, expPart, hasExp := rest, "", false
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		mantissa, expPart, hasExp = rest[:i], rest[i+1:], true
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	if !isASCIIDigits(whole) || !isASCIIDigits(frac) || whole+frac == "" {
		return numberSyntax
	}
	exp := 0
	if hasExp {
		digits := strings.TrimPrefix(strings.TrimPrefix(expPart, "-"), "+")
		if len(expPart)-len(digits) > 1 || digits == "" || !isASCIIDigits(digits) {
			return numberSyntax
		}
		exp = numberExponentClamp
		if trimmed := strings.TrimLeft(digits, "0"); len(trimmed) <= numberExponentDigits {
			exp, _ = strconv.Atoi("0" + trimmed) // cannot fail: at most 9 digits
		}
		if strings.HasPrefix(expPart, "-") {
			exp = -exp
		}
	}

	// value = digits × 10^(exp - len(frac)); strip the zeros that carry no precision.
	digits := strings.TrimLeft(whole+frac, "0")
	sig := strings.TrimRight(digits, "0")
	if sig == "" {
		return numberOK // zero, whatever its exponent
	}
	if len(sig) > maxNumberPrecision {
		return numberRange
	}
	// |value| = sig × 10^e, so its order of magnitude is e + len(sig) - 1.
	e := exp - len(frac) + (len(digits) - len(sig))
	order := e + len(sig) - 1
	switch {
	case order > maxNumberExponent:
		return numberRange
	case order == maxNumberExponent && sig != "1":
		return numberRange // above 10^126 itself
	case order < minNumberExponent:
		return numberRange
	}
	return numberOK
}

// isASCIIDigits reports whether every byte of s is 0-9; it is true of "".
func isASCIIDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
