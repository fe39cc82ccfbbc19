package verr_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim/verr"
)

func TestErrorIsErrno(t *testing.T) {
	err := error(verr.New("ibv_destroy_cq", syscall.EBUSY, "1 QP still uses the CQ"))
	if !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("errors.Is(%v, EBUSY) = false", err)
	}
	if errors.Is(err, syscall.EINVAL) {
		t.Fatalf("errors.Is(%v, EINVAL) = true", err)
	}
	if got := verr.Errno(err); got != syscall.EBUSY {
		t.Fatalf("Errno = %v, want EBUSY", got)
	}
	want := "ibv_destroy_cq: EBUSY (device or resource busy): 1 QP still uses the CQ"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestWrapKeepsCause(t *testing.T) {
	err := error(verr.Wrap("ibv_get_cq_event", syscall.EINTR, "wait abandoned", context.DeadlineExceeded))
	if !errors.Is(err, syscall.EINTR) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v does not unwrap to both EINTR and DeadlineExceeded", err)
	}
	if verr.Errno(fmt.Errorf("plain")) != 0 {
		t.Fatal("Errno of a plain error is not 0")
	}
	if verr.Name(syscall.Errno(9999)) != "errno 9999" {
		t.Fatalf("Name(9999) = %q", verr.Name(syscall.Errno(9999)))
	}
}

func ExampleError() {
	err := error(verr.New("ibv_resize_cq", syscall.EINVAL, "3 completions are unpolled, the new size 2 cannot hold them"))
	fmt.Println(errors.Is(err, syscall.EINVAL))
	fmt.Println(err)
	// Output:
	// true
	// ibv_resize_cq: EINVAL (invalid argument): 3 completions are unpolled, the new size 2 cannot hold them
}
