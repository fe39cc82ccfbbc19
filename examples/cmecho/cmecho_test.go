package cmecho_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/examples/cmecho"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/simtest"
)

// TestEcho runs the application on verbsim: the server listens on the
// second device's address, the client dials it by address. Server and
// client are two goroutines, so the fabric runs in a testing/synctest
// bubble, where virtual time moves only once both are blocked (in Auto
// mode the client's blocked read could let the CM's timers run out before
// the server's goroutine had its turn).
func TestEcho(t *testing.T) {
	simtest.InBubble(t, simtest.Options{}, func(t *testing.T, f *simtest.Fabric) {
		cm := f.RDMACM()
		addr := netip.AddrPortFrom(f.Devices()[1].PortAddrs(1)[0], 0)
		srv, err := cmecho.Listen(cm, addr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		cl, err := cmecho.Dial(t.Context(), cm, srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range []string{"hello", "over", "the", "connection manager"} {
			if got, err := cl.Call(t.Context(), []byte(msg)); err != nil || string(got) != msg {
				t.Fatalf("Call(%q) = %q, %v", msg, got, err)
			}
		}
		if err := cl.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		stop()
		if err := <-served; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v", err)
		}
	})
}

// TestDialNobody: dialing a port nobody listens on reports the REJECTED
// event of the connection manager.
func TestDialNobody(t *testing.T) {
	f := simtest.New(t)
	addr := netip.AddrPortFrom(f.Devices()[1].PortAddrs(1)[0], 7)
	_, err := cmecho.Dial(t.Context(), f.RDMACM(), addr)
	var ee *cmecho.EventError
	if !errors.As(err, &ee) || ee.Got != rdmacm.EventRejected || ee.Status != int(rdmacm.RejInvalidServiceID) {
		t.Fatalf("Dial to nobody: %v; want REJECTED with status 8", err)
	}
}

// TestImportsOnlyRDMACMAndVerbs keeps the application portable.
func TestImportsOnlyRDMACMAndVerbs(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.Contains(p, ".") && p != "github.com/verbsim/verbsim/verbs" && p != "github.com/verbsim/verbsim/rdmacm" {
				t.Errorf("%s imports %s; the application may import only packages verbs and rdmacm", name, p)
			}
		}
	}
}
