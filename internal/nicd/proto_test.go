//go:build linux

package nicd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/verbsim/verbsim/internal/cabi"
)

// header is capi/nicd/nicd.h, the C side of the protocol.
var header = filepath.Join("..", "..", "capi", "nicd", "nicd.h")

// TestProtoOps: enum nicd_op of nicd.h and the ops here are the same
// names with the same numbers.
func TestProtoOps(t *testing.T) {
	b, err := os.ReadFile(header)
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(NICD_[A-Z_]+) = (\d+),`).FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		c[m[1]] = n
	}
	for o := op(1); o < opCount; o++ {
		if n, ok := c[o.String()]; !ok || n != int(o) {
			t.Errorf("%s is %d here; nicd.h has %d (present %v)", o, o, n, ok)
		}
		delete(c, o.String())
	}
	for name := range c {
		t.Errorf("nicd.h has %s, which the daemon does not know", name)
	}
	if m := regexp.MustCompile(`#define NICD_VERSION (\d+)`).FindStringSubmatch(string(b)); m == nil || m[1] != strconv.Itoa(version) {
		t.Errorf("NICD_VERSION in nicd.h: %v, want %d", m, version)
	}
	if m := regexp.MustCompile(`#define NICD_MAX_MSG \((\d+) \* 1024\)`).FindStringSubmatch(string(b)); m == nil || m[1] != strconv.Itoa(maxMsg>>10) {
		t.Errorf("NICD_MAX_MSG in nicd.h: %v, want %d KiB", m, maxMsg>>10)
	}
}

// TestProtoLayouts: every record of nicd.h has its mirror's layout.
func TestProtoLayouts(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc); CI installs one")
	}
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skip("no libibverbs headers (Debian: libibverbs-dev); CI installs them")
	}
	abs, err := filepath.Abs(header)
	if err != nil {
		t.Fatal(err)
	}
	if err := cabi.CheckLayouts(cc, []string{abs}, protoMirrors); err != nil {
		t.Fatal(err)
	}
}
