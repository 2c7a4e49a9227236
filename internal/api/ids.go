package api

import "strings"

// validFIFOToken reports whether s is a valid MessageDeduplicationId,
// MessageGroupId or ReceiveRequestAttemptId: 1 to max characters, each an
// ASCII letter, digit or punctuation character (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
// Spaces are not allowed.
func validFIFOToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' { // '!' (0x21) to '~' (0x7E) is exactly alphanumerics and punctuation
			return false
		}
	}
	return true
}

// validateFIFOToken returns SQS's error for a malformed FIFO token parameter
// (param names the parameter). An empty value means the parameter is absent
// and is valid here; whether it is required depends on the queue.
func validateFIFOToken(param, value string, max int) error {
	if value == "" || validFIFOToken(value, max) {
		return nil
	}
	return ErrInvalidParameterValue("Value %s for parameter %s is invalid. Reason: %s can only include alphanumeric and punctuation characters. 1 to %d in length.", value, param, param, max)
}

// validBatchEntryID reports whether id is 1-80 characters of A-Z a-z 0-9 - _.
func validBatchEntryID(id string) bool {
	return validSimpleName(id, MaxBatchEntryIdLength)
}

// validSimpleName reports whether s is 1 to max characters of A-Z a-z 0-9 - _,
// the alphabet of queue names, batch entry ids and permission labels.
func validSimpleName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' && s[i] != '_' {
			return false
		}
	}
	return true
}

// IsAccountID reports whether s is an AWS account id: 12 ASCII digits.
func IsAccountID(s string) bool {
	return len(s) == 12 && isASCIIDigits(s)
}

// validARN reports whether s has the general form of an ARN,
// arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE, with every part non-empty.
func validARN(s string) bool {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return false
	}
	for _, p := range parts[1:] {
		if p == "" {
			return false
		}
	}
	return true
}
