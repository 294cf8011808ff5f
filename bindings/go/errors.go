// SPDX-License-Identifier: Apache-2.0

package cgroupguard

/*
#include "shim.h"
*/
import "C"

import "syscall"

// Error is the error of every call of this package that can fail: what was
// done (Op: "add", "lend begin", "defer kill", ...), on what (Path: the
// guard's cgroup, or the snapshot's name; empty for a set's own calls), and
// why (Err: the library's errno as a syscall.Errno, or a context's error).
// errors.Is(err, syscall.ENOENT) and errors.As(err, &e) with e a *Error both
// work.
type Error struct {
	Op   string
	Path string
	Err  error
}

// Error formats e as "cgroupguard: op path: reason".
func (e *Error) Error() string {
	s := "cgroupguard: " + e.Op
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Err == nil {
		return s + ": unknown error"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap is e.Err: a syscall.Errno for the library's errors.
func (e *Error) Unwrap() error { return e.Err }

// wrap gives err (nil: none) its operation and path.
func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Path: path, Err: err}
}

// errno is the syscall.Errno of a C call's negative return, nil for one of 0
// or more; the public calls wrap it.
func errno(r C.int) error {
	if r < 0 {
		return syscall.Errno(-r)
	}
	return nil
}
