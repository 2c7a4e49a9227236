package config

import (
	"fmt"
	"regexp"
	"strconv"
)

// Error is a problem with a config file, at a line of it.
type Error struct {
	// File is the config file's path as given.
	File string
	// Line is the 1-based line of the problem, or 0 if the problem is the
	// file as a whole.
	Line int
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error, if any (an *api.Error when the server
	// refused a request made for the file).
	Err error
}

// Error returns "FILE:LINE: MSG[: ERR]".
func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	s += ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// yamlLineError matches the errors of the YAML parser, which carry the line
// in their text only: "yaml: line 3: could not find expected ':'".
var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns an error of the YAML parser into an *Error at its line.
func syntaxError(file string, err error) *Error {
	if m := yamlLineError.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "YAML syntax: " + m[2]}
	}
	return &Error{File: file, Msg: fmt.Sprintf("YAML syntax: %v", err)}
}
