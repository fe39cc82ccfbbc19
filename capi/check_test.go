package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCheckManPage: the verbs documentation's example (check_manpage.c: a
// CQ with no channel, a channel no CQ uses, a wait on it) under
// VERBSIM_CHECK=halt_on_error is reported as the wait starts, naming the
// rule, the channel, the CQ with its cq_context and the C backtrace, and
// the program ends with the sanitizer's exit status; without the
// sanitizer nothing is said (the program would block: it is not run).
func TestCheckManPage(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "check_manpage")
	out, err := run(t, dir, []string{"VERBSIM_CHECK=halt_on_error"}, bin)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 66 {
		t.Fatalf("exit %v, want status 66:\n%s", err, out)
	}
	for _, want := range []string{"verbsim check: CHAN-13 wait: ibv_get_cq_event on sim0/chan#1:", "sim0/cq#1 (cq_context NULL)",
		"at main (check_manpage.c:", "channel created at main (check_manpage.c:", "1 finding (CHAN-13: 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "an event came") {
		t.Errorf("the wait returned:\n%s", out)
	}
}

// TestCheckLoopbackClean: a correct program (loopback.c) runs clean with
// every check on, halting at any finding.
func TestCheckLoopbackClean(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "loopback")
	for _, env := range [][]string{{"VERBSIM_CHECK=halt_on_error"}, {"VERBSIM_CHECK=halt_on_error", "VERBSIM_MODE=auto"}} {
		out, err := run(t, dir, env, bin)
		if err != nil || !strings.Contains(out, "loopback: OK") || strings.Contains(out, "verbsim check:") {
			t.Errorf("%v: %v\n%s", env, err, out)
		}
	}
}
