package api

import (
	"strings"
	"testing"
)

func TestCheckNumber(t *testing.T) {
	tests := []struct {
		s    string
		want numberCheck
	}{
		{"0", numberOK},
		{"-0", numberOK},
		{"42", numberOK},
		{"+42", numberOK},
		{"-42", numberOK},
		{"3.14", numberOK},
		{".5", numberOK},
		{"5.", numberOK},
		{"1e5", numberOK},
		{"2.5E-3", numberOK},
		{"1e+5", numberOK},
		{"0001", numberOK},
		{"1234567890123456789012", numberOK},
		{strings.Repeat("9", 38), numberOK},
		{strings.Repeat("9", 39), numberRange},
		{"1" + strings.Repeat("0", 60), numberOK},          // one significant digit
		{"0." + strings.Repeat("0", 60) + "1", numberOK},   // 10^-61
		{"1" + strings.Repeat("0", 38) + "1", numberRange}, // 40 significant digits
		{"1e126", numberOK},                                // the upper bound itself
		{"-1e126", numberOK},                               // magnitude bound
		{"1.0000000000000000000000000000000000001e126", numberRange},
		{"9.99e125", numberOK},
		{"1e127", numberRange},
		{"1e-128", numberOK},
		{"9e-129", numberRange},
		{"0e999999999999999999", numberOK},
		{"1e999999999999999999", numberRange},
		{"1e-999999999999999999", numberRange},
		{"", numberSyntax},
		{"-", numberSyntax},
		{".", numberSyntax},
		{"e5", numberSyntax},
		{"1e", numberSyntax},
		{"1e+", numberSyntax},
		{"1e+-5", numberSyntax},
		{"1.2.3", numberSyntax},
		{"+-1", numberSyntax},
		{"-+1", numberSyntax},
		{"--1", numberSyntax},
		{" 1", numberSyntax},
		{"1 ", numberSyntax},
		{"0x10", numberSyntax},
		{"1_000", numberSyntax},
		{"NaN", numberSyntax},
		{"Infinity", numberSyntax},
		{"world", numberSyntax},
		{"١٢", numberSyntax}, // Arabic-Indic digits
	}
	for _, tt := range tests {
		if got := checkNumber(tt.s); got != tt.want {
			t.Errorf("checkNumber(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}
