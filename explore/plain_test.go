package explore

import (
	"context"
	"errors"
	"testing"
)

// TestRunPlain: a plain run waits for the goroutines, cancels the daemons,
// runs the Finally checks and reports what the world reported.
func TestRunPlain(t *testing.T) {
	if f := RunPlain(canonical); f != nil {
		t.Fatalf("the canonical world failed plainly: %v", f)
	}

	var daemonEnded, finallyRan bool
	f := RunPlain(func(w *World) {
		w.Fabric()
		w.Daemon("server", func(ctx context.Context) {
			<-ctx.Done()
			daemonEnded = errors.Is(ctx.Err(), context.Canceled)
		})
		w.Go("client", func(context.Context) { w.Errorf("client: %d", 7) })
		w.Finally(func() { finallyRan = true })
	})
	if f == nil || f.Kind != Assertion || f.Message != "client: 7" {
		t.Fatalf("failure %+v, want the client's assertion", f)
	}
	if !daemonEnded || !finallyRan {
		t.Fatalf("daemon ended %v, Finally ran %v; want both", daemonEnded, finallyRan)
	}

	if f := RunPlain(func(w *World) { w.Go("p", func(context.Context) { panic("boom") }) }); f == nil || f.Kind != Panic {
		t.Fatalf("failure %+v, want a panic", f)
	}
	if f := RunPlain(func(w *World) { w.Fatalf("stop") }); f == nil || f.Kind != Assertion {
		t.Fatalf("failure %+v, want the world function's Fatalf", f)
	}
}
