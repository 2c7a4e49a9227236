package api

import "unicode/utf8"

// validMessageText reports whether s is valid UTF-8 made only of the
// characters SQS accepts in a message body and in String attribute values:
// #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF (the
// characters of XML 1.0). Invalid UTF-8, including encoded surrogates, is
// rejected; a literal U+FFFD is allowed.
func validMessageText(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			// ASCII: only the three control characters tab, LF and CR.
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 { // invalid UTF-8 (DecodeRune never reads a valid rune as one byte here)
			return false
		}
		if !allowedNonASCII(r) {
			return false
		}
		i += size
	}
	return true
}

// allowedNonASCII reports whether a decoded non-ASCII rune is in SQS's set.
// DecodeRuneInString never yields surrogates, but the range test keeps the
// rule readable beside the documentation.
func allowedNonASCII(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
