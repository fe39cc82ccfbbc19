package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBuiltin: verbsim run NAME finds a built-in scenario, prints its
// timeline with units and rules, and list names it.
func TestRunBuiltin(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"run", "-profile", "rxe", "08-overrun"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"tour/08-overrun.scen, profile rxe", "[1] fabric devices=(a)", "  Overrun: when a WC", "ibv_poll_cq(B, 16) = 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"list"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "08-overrun") {
		t.Errorf("list: exit %d: %s", code, out.String())
	}
}

// TestRunJSON: -format json is one object with every step's state.
func TestRunJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"run", "-format", "json", "02-arm-once"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var r struct {
		Profile string
		Steps   []struct {
			Command string
			State   struct {
				CQs []struct {
					Name string
					Arm  string
				}
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Profile != "default" || len(r.Steps) < 5 || r.Steps[4].Command != "req_notify_cq cq=A next" || r.Steps[4].State.CQs[0].Arm != "next" {
		t.Errorf("json %+v", r)
	}
}

// TestRunErrors: a malformed file is one line with file:line and exit 1;
// an unknown file or format is an error too.
func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.scen")
	os.WriteFile(bad, []byte("open_device ctx\n\npoll_cq\n"), 0o644)
	var out, errOut bytes.Buffer
	if code := run([]string{"run", bad}, &out, &errOut); code != 1 || errOut.String() != "verbsim: "+bad+":3: poll_cq: missing cq= (usage: poll_cq cq=cq [n=N] [ex])\n" {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"run", "no-such-scenario"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "verbsim list") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
	if code := run([]string{"run", "-format", "xml", "01-cq-basics"}, &out, &errOut); code != 2 {
		t.Errorf("-format xml: exit %d", code)
	}
}

// TestRunPictures: -svg and -html write their files; they draw one
// scenario only.
func TestRunPictures(t *testing.T) {
	dir := t.TempDir()
	svg, page := filepath.Join(dir, "d.svg"), filepath.Join(dir, "p.html")
	var out, errOut bytes.Buffer
	if code := run([]string{"run", "-svg", svg, "-html", page, "05-empty-event"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, f := range []string{svg, page} {
		if b, err := os.ReadFile(f); err != nil || len(b) < 1000 {
			t.Errorf("%s: %v, %d bytes", f, err, len(b))
		}
	}
	errOut.Reset()
	if code := run([]string{"run", "-svg", svg, "01-cq-basics", "02-arm-once"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "name exactly one") {
		t.Errorf("two scenarios with -svg: exit %d: %s", code, errOut.String())
	}
}
