package api

import (
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// validateMessageAttributes checks the user-defined message attributes of
// one message: their number, names, data types and values. Attributes are
// checked in ascending name order, so that a message with several bad
// attributes always gets the same error.
func validateMessageAttributes(attrs map[string]MessageAttributeValue) error {
	if len(attrs) > MaxMessageAttributes {
		return ErrInvalidParameterValue("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), MaxMessageAttributes)
	}
	if len(attrs) == 0 {
		return nil // most messages: spare the sorted copy of no names
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		if err := validateMessageAttributeName(name); err != nil {
			return err
		}
		if err := validateMessageAttributeValue(name, attrs[name]); err != nil {
			return err
		}
	}
	return nil
}

// validateMessageAttributeName checks a user attribute name: 1-256
// bytes of letters, digits, _ - . (SQS was recorded accepting non-ASCII
// letters such as "attr.1øßä" and refusing symbols such as "§": moto
// test_sqs.py / localstack test_send_message_with_invalid_string_attributes,
// AWS-validated), not starting with "AWS." or "Amazon."
// in any case, not starting or ending with a period, no two periods in a row.
func validateMessageAttributeName(name string) error {
	switch {
	case name == "":
		return ErrInvalidParameterValue("The request must contain non-empty message (user) attribute names.")
	case len(name) > MaxMessageAttributeNameLength:
		return ErrInvalidParameterValue("Message (user) attribute name must be shorter than %d bytes.", MaxMessageAttributeNameLength)
	case !isAttributeNameChars(name):
		return ErrInvalidParameterValue("Message (user) attributes name can only contain upper and lower score characters, digits, periods, hyphens and underscores.")
	case hasPrefixFold(name, "AWS.") || hasPrefixFold(name, "Amazon.") ||
		strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
		return ErrInvalidParameterValue("You can't use message attribute names beginning with 'AWS.' or 'Amazon.'. These strings are reserved for internal use. Additionally, they cannot start or end with '.'.")
	case strings.Contains(name, ".."):
		return ErrInvalidParameterValue("Message (user) attribute name '%s' must not have successive '.' characters.", name)
	}
	return nil
}

// validateMessageAttributeValue checks one user attribute's DataType and
// value. The checks run in SQS's order: a value must be present at all, then
// the type must be present and well formed, then the value must suit it.
func validateMessageAttributeValue(name string, v MessageAttributeValue) error {
	if len(v.StringListValues) > 0 || len(v.BinaryListValues) > 0 {
		return ErrInvalidParameterValue("Message attribute list values in SendMessage operation are not supported.")
	}
	if v.StringValue == nil && v.BinaryValue == nil {
		return ErrInvalidParameterValue("The message (user) attribute '%s' must contain a non-empty message attribute value.", name)
	}
	if v.DataType == "" {
		return ErrInvalidParameterValue("The message (user) attribute '%s' must contain a non-empty message attribute type.", name)
	}
	if len(v.DataType) > MaxMessageAttributeDataTypeLength {
		return ErrInvalidParameterValue("Message (user) attribute type must be shorter than %d bytes.", MaxMessageAttributeDataTypeLength)
	}
	base, ok := attributeBaseType(v.DataType)
	if !ok {
		return ErrInvalidParameterValue("The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
	}
	switch base {
	case "Binary":
		if len(v.BinaryValue) == 0 {
			return ErrInvalidParameterValue("Message (user) attribute '%s' must contain a non-empty value of type 'Binary'.", name)
		}
	case "String", "Number":
		if v.StringValue == nil || *v.StringValue == "" {
			return ErrInvalidParameterValue("Message (user) attribute '%s' must contain a non-empty value of type '%s'.", name, base)
		}
		if !validMessageText(*v.StringValue) {
			return errInvalidAttributeValueChars(name)
		}
		if base == "Number" {
			switch checkNumber(*v.StringValue) {
			case numberSyntax:
				return ErrInvalidParameterValue("Can't cast the value of message (user) attribute '%s' to a number.", name)
			case numberRange:
				return ErrInvalidParameterValue("Value of message (user) attribute '%s' is out of range: a Number has at most %d digits of precision and a magnitude between 10^%d and 10^+%d.", name, maxNumberPrecision, minNumberExponent, maxNumberExponent)
			}
		}
	}
	return nil
}

// attributeBaseType splits a DataType into its base type (String, Number or
// Binary) and reports whether it is well formed: the base alone, or the base,
// a period and a non-empty custom label of valid characters ("Number.int").
func attributeBaseType(dataType string) (string, bool) {
	base, label, custom := strings.Cut(dataType, ".")
	switch base {
	case "String", "Number", "Binary":
	default:
		return "", false
	}
	if custom && (label == "" || !validMessageText(label)) {
		return "", false
	}
	return base, true
}

// validateMessageSystemAttributes checks the system attributes a sender may
// set: only AWSTraceHeader exists, a non-empty String.
func validateMessageSystemAttributes(attrs map[string]MessageSystemAttributeValue) error {
	if len(attrs) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		if name != MsgAttrAWSTraceHeader {
			return ErrInvalidParameterValue("Message system attribute name '%s' is invalid.", name)
		}
		if len(v.StringListValues) > 0 || len(v.BinaryListValues) > 0 {
			return ErrInvalidParameterValue("Message attribute list values in SendMessage operation are not supported.")
		}
		if v.DataType != "String" {
			return ErrInvalidParameterValue("The message system attribute '%s' must be of type 'String'.", name)
		}
		if v.StringValue == nil || *v.StringValue == "" {
			return ErrInvalidParameterValue("Message system attribute '%s' must contain a non-empty value of type 'String'.", name)
		}
		if !validMessageText(*v.StringValue) {
			return ErrInvalidParameterValue("Message system attribute '%s' contains invalid characters. Only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF are allowed.", name)
		}
	}
	return nil
}

// errInvalidAttributeValueChars answers an attribute value with characters
// outside the message alphabet. SQS answers InvalidParameterValue here, not
// the body's InvalidMessageContents (localstack
// test_invalid_string_attributes_cause_invalid_parameter_value_error,
// AWS-validated); the recording keeps the code, not the wording, so the
// message is fifoq's.
func errInvalidAttributeValueChars(name string) *Error {
	return ErrInvalidParameterValue("Message (user) attribute '%s' contains invalid characters. Only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF are allowed.", name)
}

// isAttributeNameChars reports whether name is valid UTF-8 made only of
// letters, digits, _ - and .
func isAttributeNameChars(name string) bool {
	for _, r := range name {
		switch {
		case r == utf8.RuneError:
			return false
		case r < utf8.RuneSelf:
			if !isAlnum(byte(r)) && r != '_' && r != '-' && r != '.' {
				return false
			}
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			return false
		}
	}
	return true
}

// hasPrefixFold reports whether s starts with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
