package portreport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestParse: the lines of the processes of one run give the profile's
// readings, the union of what they consulted and their count; a line of
// another form is an error.
func TestParse(t *testing.T) {
	irdma := sim.IRDMAProfile()
	var a, b verbs.ReadingSet
	a.Add(verbs.ReadingNoSRQ)
	b.Add(verbs.ReadingResetPurgesCQ)
	data := fmt.Sprintf("verbsim-report profile=irdma readings=%#x consulted=%#x pid=1\n\nverbsim-report profile=irdma readings=%#x consulted=%#x pid=2\n",
		uint64(irdma.Readings.On()), uint64(a), uint64(irdma.Readings.On()), uint64(b))
	rs, consulted, n, err := Parse([]byte(data))
	if err != nil || n != 2 || rs != irdma.Readings || consulted != a|b {
		t.Errorf("Parse: %v, %v, %d, %v", rs, consulted, n, err)
	}
	if _, _, _, err := Parse([]byte("hello\n")); err == nil {
		t.Error("a line of another form parsed")
	}
	if _, _, _, err := Parse([]byte("verbsim-report consulted=zz\n")); err == nil {
		t.Error("a bad number parsed")
	}
}

// TestWrite: the report names the command as a shell reads it, each
// run's ending, the profiles by outcome, and each reading a run met with
// what every profile does there.
func TestWrite(t *testing.T) {
	var met verbs.ReadingSet
	met.Add(verbs.ReadingNoSRQ)
	runs := []Run{
		{Profile: "default", ExitCode: 0, Processes: 2, Output: []byte("ok\n100 iters\n\n"), Consulted: met},
		{Profile: "irdma", ExitCode: 1, Processes: 2, Output: []byte("Couldn't create SRQ\n"), Consulted: met},
	}
	var out strings.Builder
	Write(&out, []string{"sh", "-c", "a & b; wait"}, runs)
	for _, want := range []string{
		"verbsim report: sh -c 'a & b; wait', under 2 profile(s)\n",
		"  default  0     2         100 iters\n",
		"  irdma    1     2         Couldn't create SRQ\n",
		"The outcome differs between providers: exit 0 under default; exit 1 under irdma.\n",
		"  SRQ-13 (NoSRQ), met by the run under default, irdma\n",
		"    default, rxe, mlx5, siw: SRQs work\n",
		"    irdma: ibv_create_srq fails with EOPNOTSUPP\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	Write(&out, []string{"prog"}, runs[:1:1])
	if !strings.Contains(out.String(), "Every run exited 0.") {
		t.Errorf("one run:\n%s", out.String())
	}
	runs[0].Consulted = 0
	out.Reset()
	Write(&out, []string{"prog"}, runs[:1])
	if !strings.Contains(out.String(), "No run depended on a behaviour where the profiles differ.") {
		t.Errorf("nothing met:\n%s", out.String())
	}
}

func TestShellJoin(t *testing.T) {
	if got := shellJoin([]string{"sh", "-c", "it's $x", ""}); got != `sh -c 'it'\''s $x' ''` {
		t.Errorf("shellJoin: %s", got)
	}
}
