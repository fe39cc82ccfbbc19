package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestWalkthroughGolden runs the walkthrough under each profile and compares
// it with the reviewed transcript in testdata. Run with -update after a
// deliberate change and review the diff.
func TestWalkthroughGolden(t *testing.T) {
	for _, profile := range []string{"default", "rxe"} {
		t.Run(profile, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run([]string{"walkthrough", "-profile", profile}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			path := filepath.Join("testdata", "walkthrough-"+profile+".golden")
			if *update {
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/verbsim -update to create it)", err)
			}
			if d := cmp.Diff(string(want), out.String()); d != "" {
				t.Errorf("walkthrough output changed (-want +got):\n%s", d)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		in   string // expected in stdout+stderr
	}{
		{nil, 0, "CQ basics (verbsim run 01-cq-basics)"},
		{[]string{"walkthrough"}, 0, "Overrun into IBV_EVENT_CQ_ERR"},
		{[]string{"help"}, 0, "usage: verbsim"},
		{[]string{"-h"}, 0, "usage: verbsim"},
		{[]string{"-profile", "mlx9"}, 2, `"mlx9" is not a profile; the profiles are default, rxe, mlx5, siw, irdma`},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"walkthrough", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
	} {
		var out bytes.Buffer
		code := run(tt.args, &out, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.in) {
			t.Errorf("verbsim %v: exit %d, output %q; want exit %d containing %q", tt.args, code, out.String(), tt.code, tt.in)
		}
	}
}

// TestGlobalFlagsBeforeCommand checks that -profile works before the
// command name as well as after it, in every spelling, and that a value
// after the name wins.
func TestGlobalFlagsBeforeCommand(t *testing.T) {
	golden := func(profile string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "walkthrough-"+profile+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rxe, def := golden("rxe"), golden("default")
	if rxe == def {
		t.Fatal("the two golden walkthroughs are equal, so this test could not tell the profiles apart")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-profile=rxe", "walkthrough"}, rxe},
		{[]string{"-profile", "rxe", "walkthrough"}, rxe},
		{[]string{"--profile", "rxe", "walkthrough"}, rxe},
		{[]string{"walkthrough", "-profile=rxe"}, rxe},
		{[]string{"-profile", "default", "walkthrough", "-profile", "rxe"}, rxe},
		{[]string{"-profile", "rxe", "walkthrough", "-profile", "default"}, def},
		{[]string{"walkthrough"}, def},
	} {
		var out, errOut bytes.Buffer
		if code := run(tt.args, &out, &errOut); code != 0 {
			t.Errorf("verbsim %v: exit %d: %s", tt.args, code, errOut.String())
			continue
		}
		if out.String() != tt.want {
			t.Errorf("verbsim %v: not the walkthrough of the expected profile", tt.args)
		}
	}

	// pingpong: the global value reaches the command, and its own flag
	// overrides it.
	for _, tt := range []struct {
		global string
		args   []string
		want   string
	}{
		{"rxe", []string{"-n", "5"}, "rxe"},
		{"rxe", []string{"-n", "5", "-profile", "default"}, "default"},
		{"default", []string{"-profile=rxe"}, "rxe"},
		{"default", nil, "default"},
	} {
		var errOut bytes.Buffer
		cfg, _, _, ok := parsePingpong(globalFlags{profile: tt.global}, tt.args, &errOut)
		if !ok || cfg.Profile.Name != tt.want {
			t.Errorf("global -profile %s, pingpong %v: ok=%v profile %q, want %q (%s)",
				tt.global, tt.args, ok, cfg.Profile.Name, tt.want, errOut.String())
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		in   string
	}{
		{[]string{"-profile", "rxe", "pingpong", "-n", "5"}, 0, "data: 10 messages checked"},
		{[]string{"-profile=rxe", "pingpong", "-n", "5", "-e"}, 0, "completion events: client"},
		{[]string{"-profile", "mlx9", "pingpong", "-n", "5"}, 2, `"mlx9" is not a profile; the profiles are default, rxe, mlx5, siw, irdma`},
		{[]string{"-profile", "mlx9", "walkthrough"}, 2, `"mlx9" is not a profile; the profiles are default, rxe, mlx5, siw, irdma`},
		{[]string{"-n", "5", "pingpong"}, 2, "flag provided but not defined: -n"},
	} {
		var out bytes.Buffer
		code := run(tt.args, &out, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.in) {
			t.Errorf("verbsim %v: exit %d, output %q; want exit %d containing %q", tt.args, code, out.String(), tt.code, tt.in)
		}
	}
}

// TestHelp checks that -h, --help and help list the commands and the
// global flags, and that help <command> shows that command's flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}, {"-profile", "rxe", "--help"}} {
		var out bytes.Buffer
		if code := run(args, &out, &out); code != 0 {
			t.Errorf("verbsim %v: exit %d", args, code)
		}
		for _, want := range []string{
			"usage: verbsim [global flags] [command] [command flags]",
			"  walkthrough ", "  pingpong ", "  help ",
			"Global flags", "-profile string", "verbsim -profile rxe pingpong",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("verbsim %v: the help lacks %q:\n%s", args, want, out.String())
			}
		}
	}
	for _, tt := range []struct{ args []string }{
		{[]string{"help", "pingpong"}}, {[]string{"pingpong", "--help"}}, {[]string{"-profile", "rxe", "pingpong", "-h"}},
	} {
		var out bytes.Buffer
		if code := run(tt.args, &out, &out); code != 0 || !strings.Contains(out.String(), "usage: verbsim pingpong") ||
			!strings.Contains(out.String(), "-drop float") {
			t.Errorf("verbsim %v: exit %d, output %q; want pingpong's flags", tt.args, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := run([]string{"help", "walkthrough"}, &out, &out); code != 0 || !strings.Contains(out.String(), "usage: verbsim walkthrough") {
		t.Errorf("verbsim help walkthrough: exit %d, output %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"help", "frobnicate"}, &out, &out); code != 2 || !strings.Contains(out.String(), `unknown command "frobnicate"`) {
		t.Errorf("verbsim help frobnicate: exit %d, output %q", code, out.String())
	}
}
