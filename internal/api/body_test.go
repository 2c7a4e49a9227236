package api

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidMessageText(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{"empty", "", true},
		{"ascii", "Hello, world! {\"a\":1}", true},
		{"tab lf cr", "a\tb\nc\r", true},
		{"nul", "a\x00b", false},
		{"other control", "a\x1fb", false},
		{"vertical tab", "\v", false},
		{"form feed", "\f", false},
		{"del", "\x7f", true},
		{"c1 control", "\u0085", true},
		{"latin", "héllo", true},
		{"last before surrogates", "\uD7FF", true},
		{"first after surrogates", "\uE000", true},
		{"replacement character", "\uFFFD", true},
		{"U+FFFE", "\uFFFE", false},
		{"U+FFFF", "\uFFFF", false},
		{"supplementary", "😀 \U00010000 \U0010FFFF", true},
		{"invalid byte", "a\xffb", false},
		{"truncated sequence", "\xe2\x82", false},
		{"encoded surrogate", "\xed\xa0\x80", false},
		{"overlong slash", "\xc0\xaf", false},
		{"above U+10FFFF", "\xf4\x90\x80\x80", false},
	}
	for _, tt := range tests {
		if got := validMessageText(tt.s); got != tt.want {
			t.Errorf("%s: validMessageText(%q) = %v, want %v", tt.name, tt.s, got, tt.want)
		}
	}
}

// referenceValidMessageText is the rule as SQS documents it, written the
// obvious way: valid UTF-8, and every character in one of the ranges.
func referenceValidMessageText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		ok := r == 0x9 || r == 0xA || r == 0xD ||
			(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
		if !ok {
			return false
		}
	}
	return true
}

func FuzzValidMessageText(f *testing.F) {
	for _, s := range []string{"", "hello", "\x00", "\uFFFD", "\uFFFE", "\xed\xa0\x80", "😀", "\xf4\x90\x80\x80", strings.Repeat("é", 10)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validMessageText(s), referenceValidMessageText(s); got != want {
			t.Fatalf("validMessageText(%q) = %v, reference says %v", s, got, want)
		}
	})
}
