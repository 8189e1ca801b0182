package zkclient

import (
	"errors"
	"fmt"
	"unicode/utf16"
)

// PathError is a path the client refuses before sending it, with the Java
// client's message (PathUtils.validatePath), e.g. "Path must start with /
// character".
type PathError struct{ Msg string }

func (e *PathError) Error() string { return e.Msg }

// ValidatePath checks path as the Java client does, with its messages.
func ValidatePath(path string) error {
	if path == "" {
		return &PathError{"Path length must be > 0"}
	}
	if path[0] != '/' {
		return &PathError{"Path must start with / character"}
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return &PathError{"Path must not end with / character"}
	}
	// Java indexes UTF-16 code units; so do the messages.
	chars := utf16.Encode([]rune(path))
	reason := ""
	lastc := uint16('/')
	for i := 1; i < len(chars); lastc, i = chars[i], i+1 {
		c := chars[i]
		switch {
		case c == 0:
			reason = fmt.Sprintf("null character not allowed @%d", i)
		case c == '/' && lastc == '/':
			reason = fmt.Sprintf("empty node name specified @%d", i)
		case c == '.' && lastc == '.':
			if chars[i-2] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c == '.':
			if chars[i-1] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			reason = fmt.Sprintf("invalid character @%d", i)
		}
		if reason != "" {
			return &PathError{fmt.Sprintf("Invalid path string \"%s\" caused by %s", path, reason)}
		}
	}
	return nil
}

// IsPathError reports whether err is a client-side path refusal.
func IsPathError(err error) bool {
	var pe *PathError
	return errors.As(err, &pe)
}
