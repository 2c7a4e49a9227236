package auth

import (
	"strings"
	"unicode/utf8"
)

// principalSet is the set of callers a Principal or NotPrincipal element
// names: everyone, or the listed accounts. fifoq has accounts and no IAM
// users or roles, so every principal is reduced to its account.
type principalSet struct {
	anyone   bool
	accounts []string
}

// has reports whether the set names the caller's account.
func (s principalSet) has(account string) bool {
	if s.anyone {
		return true
	}
	for _, a := range s.accounts {
		if a == account {
			return true
		}
	}
	return false
}

// matchesAny reports whether s matches one of the glob patterns.
func matchesAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch reports whether s matches pattern, in which * matches any run of
// characters (the empty one and colons included) and ? exactly one
// character; every other character matches itself. It never backtracks
// further than the last *, so a match costs at most len(pattern)*len(s)
// steps whatever the input.
func globMatch(pattern, s string) bool {
	px, sx := 0, 0
	star, starSx := -1, 0 // position of the last * seen, and where its run ends
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				star, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					_, w := utf8.DecodeRuneInString(s[sx:])
					px, sx = px+1, sx+w
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px, sx = px+1, sx+1
					continue
				}
			}
		}
		// Mismatch: let the last * swallow one more character and retry.
		if star < 0 || starSx >= len(s) {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starSx:])
		starSx += w
		px, sx = star+1, starSx
	}
	return true
}

// normalizeARNService returns the ARN (or ARN pattern) with its service part,
// the third of its colon-separated parts, in lower case: IAM compares ARNs
// case-sensitively except for the service. A pattern whose first two parts
// hold a wildcard has no definite third part and is returned as it is. The
// common case, a service already in lower case, allocates nothing.
func normalizeARNService(arn string) string {
	first := strings.IndexByte(arn, ':')
	if first < 0 {
		return arn
	}
	second := strings.IndexByte(arn[first+1:], ':')
	if second < 0 {
		return arn
	}
	start := first + 1 + second + 1
	if strings.ContainsAny(arn[:start], "*?") {
		return arn
	}
	end := len(arn)
	if i := strings.IndexByte(arn[start:], ':'); i >= 0 {
		end = start + i
	}
	service := arn[start:end]
	lower := strings.ToLower(service)
	if lower == service {
		return arn
	}
	return arn[:start] + lower + arn[end:]
}
