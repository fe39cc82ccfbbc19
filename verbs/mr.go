package verbs

import (
	"errors"
	"fmt"
)

// MWType is enum ibv_mw_type: how a memory window is bound and invalidated.
type MWType uint32

// The memory window types, with verbs.h values.
const (
	// MWType1 (IBV_MW_TYPE_1) is bound with QP.BindMW (ibv_bind_mw) and
	// unbound by a bind of length 0; any QP of its PD may use its rkey.
	MWType1 MWType = 1
	// MWType2 (IBV_MW_TYPE_2) is bound with a BIND_MW work request and
	// unbound by LOCAL_INV or SEND_WITH_INV; it is type 2B: only the QP
	// that bound it accepts its rkey (MW-06).
	MWType2 MWType = 2
)

// String returns "TYPE_1", "TYPE_2" or "MWType(n)".
func (t MWType) String() string {
	switch t {
	case MWType1:
		return "TYPE_1"
	case MWType2:
		return "TYPE_2"
	}
	return fmt.Sprintf("MWType(%d)", uint32(t))
}

// ReregFlags is enum ibv_rereg_mr_flags: which properties of an MR a
// re-registration changes (MR-12).
type ReregFlags uint32

// The re-registration flags, with verbs.h values (MR-12).
const (
	ReregChangeTranslation ReregFlags = 1 << 0 // IBV_REREG_MR_CHANGE_TRANSLATION: a new buffer (address and length)
	ReregChangePD          ReregFlags = 1 << 1 // IBV_REREG_MR_CHANGE_PD: a new protection domain
	ReregChangeAccess      ReregFlags = 1 << 2 // IBV_REREG_MR_CHANGE_ACCESS: new access flags
)

// ReregFailure is enum ibv_rereg_mr_err_code: the value ibv_rereg_mr
// returns on failure, which says what state the MR is in (MR-14).
type ReregFailure int

// The failure classes of the man page, with verbs.h values. verbsim pins no
// pages and never forks, so only ReregErrInput and ReregErrCmd occur; the
// other three are here so that a program can name every value.
const (
	// ReregErrInput: libibverbs found an input error before asking the
	// kernel; the MR is unchanged and valid.
	ReregErrInput ReregFailure = -1
	// ReregErrDontForkNew: marking the new range don't-fork failed; the MR
	// is unchanged and valid.
	ReregErrDontForkNew ReregFailure = -2
	// ReregErrDoForkOld: the MR was re-registered, but marking the old range
	// do-fork again failed; the new MR is valid.
	ReregErrDoForkOld ReregFailure = -3
	// ReregErrCmd: the kernel command failed; the MR should not be used,
	// only deregistered.
	ReregErrCmd ReregFailure = -4
	// ReregErrCmdAndDoForkNew: as ReregErrCmd, and the new range's fork
	// state could not be restored.
	ReregErrCmdAndDoForkNew ReregFailure = -5
)

var reregFailureNames = map[ReregFailure]string{
	0:                       "OK",
	ReregErrInput:           "IBV_REREG_MR_ERR_INPUT",
	ReregErrDontForkNew:     "IBV_REREG_MR_ERR_DONT_FORK_NEW",
	ReregErrDoForkOld:       "IBV_REREG_MR_ERR_DO_FORK_OLD",
	ReregErrCmd:             "IBV_REREG_MR_ERR_CMD",
	ReregErrCmdAndDoForkNew: "IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW",
}

// String returns the verbs.h name, e.g. "IBV_REREG_MR_ERR_CMD".
func (f ReregFailure) String() string {
	if s, ok := reregFailureNames[f]; ok {
		return s
	}
	return fmt.Sprintf("ReregFailure(%d)", int(f))
}

// MRUsable reports whether the MR may still be used after a failure of this
// class: true for the classes the man page calls "Old MR is valid" or "New
// MR is valid".
func (f ReregFailure) MRUsable() bool {
	return f != ReregErrCmd && f != ReregErrCmdAndDoForkNew
}

// ReregError is the error MR.Rereg returns: the failure class next to the
// errno error (which errors.Is matches against a syscall.Errno).
type ReregError struct {
	// Failure is what ibv_rereg_mr would have returned.
	Failure ReregFailure
	// Err carries the errno and the reason.
	Err error
}

// Error describes the failure and its class.
func (e *ReregError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%v (%v)", e.Err, e.Failure)
}

// Unwrap returns Err, so errors.Is(err, syscall.EINVAL) works.
func (e *ReregError) Unwrap() []error {
	if e == nil || e.Err == nil {
		return nil
	}
	return []error{e.Err}
}

// ReregFailureOf returns the failure class of an error from MR.Rereg, or 0
// for nil and for any other error.
func ReregFailureOf(err error) ReregFailure {
	var re *ReregError
	if errors.As(err, &re) && re != nil {
		return re.Failure
	}
	return 0
}
