package zkproto

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// PathError explains why a path is invalid. Its Code is ErrBadArguments,
// which is what a server answers for it.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("invalid path %q: %s", e.Path, e.Reason) }

// Unwrap lets errors.Is(err, ErrBadArguments) match.
func (e *PathError) Unwrap() error { return ErrBadArguments }

// ValidatePath applies ZooKeeper's PathUtils.validatePath rules.
func ValidatePath(path string) error {
	bad := func(reason string) error { return &PathError{Path: path, Reason: reason} }
	if path == "" {
		return bad("path length must be > 0")
	}
	if path[0] != '/' {
		return bad("path must start with / character")
	}
	if path == "/" {
		return nil
	}
	if path[len(path)-1] == '/' {
		return bad("path must not end with / character")
	}
	if !utf8.ValidString(path) {
		return bad("path is not valid UTF-8")
	}
	prev := '/'
	for i, c := range path {
		if i == 0 {
			continue
		}
		switch {
		case c == 0:
			return bad(fmt.Sprintf("null character not allowed @%d", i))
		case c == '/' && prev == '/':
			return bad(fmt.Sprintf("empty node name specified @%d", i))
		case c == '.' && prev == '.':
			if path[i-2] == '/' && (i+1 == len(path) || path[i+1] == '/') {
				return bad(fmt.Sprintf("relative paths not allowed @%d", i))
			}
		case c == '.':
			if prev == '/' && (i+1 == len(path) || path[i+1] == '/') {
				return bad(fmt.Sprintf("relative paths not allowed @%d", i))
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			// c > 0xffff is a surrogate pair in Java's UTF-16, which PathUtils rejects.
			return bad(fmt.Sprintf("invalid character @%d", i))
		}
		prev = c
	}
	return nil
}

// ValidateSequentialPath validates the path of a sequential create as
// clients do, as path+"1": a trailing "/" is allowed.
func ValidateSequentialPath(path string) error { return ValidatePath(path + "1") }

// ParentPath returns the parent of path as ZooKeeper computes it
// (everything before the last "/"; "/" for top-level nodes). The parent of
// "/" is "".
func ParentPath(path string) string {
	i := strings.LastIndexByte(path, '/')
	switch {
	case i < 0 || path == "/":
		return ""
	case i == 0:
		return "/"
	}
	return path[:i]
}

// BaseName returns the last segment of path ("" for "/").
func BaseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// JoinPath joins a parent path and a child name.
func JoinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// Special paths that every server has and no client can delete.
const (
	RootPath      = "/"
	ZooKeeperPath = "/zookeeper"
	QuotaPath     = "/zookeeper/quota"
	ConfigPath    = "/zookeeper/config"
)

// IsSpecialPath reports whether path is one of the four undeletable nodes.
func IsSpecialPath(path string) bool {
	switch path {
	case RootPath, ZooKeeperPath, QuotaPath, ConfigPath:
		return true
	}
	return false
}
