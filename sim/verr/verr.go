// Package verr defines the error that every verbsim verb returns.
//
// libibverbs reports failures as errno values (EINVAL, ENOMEM, EBUSY,
// EAGAIN...). verbsim keeps exactly those values, so code written for real
// verbs can branch on them with errors.Is(err, syscall.EINVAL), and adds what a
// C errno cannot carry: the verb that failed and a sentence saying why.
//
// A work-completion status is data, not an error: it travels in verbs.WC.Status
// and never becomes a Go error.
package verr

import (
	"errors"
	"fmt"
	"syscall"
)

// Error is a failed verb call. It unwraps to its Errno, and to Cause when
// there is one (for example context.DeadlineExceeded when a wait was cut short).
type Error struct {
	Verb   string        // the libibverbs function modelled, e.g. "ibv_destroy_cq"
	Errno  syscall.Errno // the value libibverbs would return or set
	Reason string        // what was wrong, in words
	Cause  error         // optional underlying error
}

// New returns an *Error for verb with errno and reason.
func New(verb string, errno syscall.Errno, reason string) *Error {
	return &Error{Verb: verb, Errno: errno, Reason: reason}
}

// Errorf is New with a formatted reason.
func Errorf(verb string, errno syscall.Errno, format string, args ...any) *Error {
	return &Error{Verb: verb, Errno: errno, Reason: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error for verb with errno whose reason and cause are err.
func Wrap(verb string, errno syscall.Errno, reason string, err error) *Error {
	return &Error{Verb: verb, Errno: errno, Reason: reason, Cause: err}
}

// Error renders the error as "verb: ENAME (description): reason", and a nil
// *Error as "<nil>", as fmt prints a nil pointer.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	s := e.Verb + ": " + Name(e.Errno) + " (" + e.Errno.Error() + ")"
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the errno and, if set, the cause; nil for a nil *Error.
func (e *Error) Unwrap() []error {
	if e == nil {
		return nil
	}
	if e.Cause != nil {
		return []error{e.Errno, e.Cause}
	}
	return []error{e.Errno}
}

// Errno extracts the errno carried by err, or 0 when err carries none.
func Errno(err error) syscall.Errno {
	var n syscall.Errno
	if errors.As(err, &n) {
		return n
	}
	return 0
}

// names holds the symbolic names of the errno values verbs return.
var names = map[syscall.Errno]string{
	syscall.EPERM:      "EPERM",
	syscall.ENOENT:     "ENOENT",
	syscall.EINTR:      "EINTR",
	syscall.EIO:        "EIO",
	syscall.EBADF:      "EBADF",
	syscall.EAGAIN:     "EAGAIN",
	syscall.ENOMEM:     "ENOMEM",
	syscall.EACCES:     "EACCES",
	syscall.EFAULT:     "EFAULT",
	syscall.EBUSY:      "EBUSY",
	syscall.EEXIST:     "EEXIST",
	syscall.ENODEV:     "ENODEV",
	syscall.EINVAL:     "EINVAL",
	syscall.ENOSPC:     "ENOSPC",
	syscall.ERANGE:     "ERANGE",
	syscall.ENOSYS:     "ENOSYS",
	syscall.EOPNOTSUPP: "EOPNOTSUPP",
	syscall.ETIMEDOUT:  "ETIMEDOUT",
	syscall.ENOTCONN:   "ENOTCONN",
}

// Name returns the symbolic name of errno ("EINVAL"), or "errno N" for a value
// verbs does not use.
func Name(errno syscall.Errno) string {
	if s, ok := names[errno]; ok {
		return s
	}
	return fmt.Sprintf("errno %d", int(errno))
}
