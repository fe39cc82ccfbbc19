package explore_test

import (
	"context"
	"fmt"

	"github.com/verbsim/verbsim/examples/echo"
	"github.com/verbsim/verbsim/explore"
)

// Example explores the event loops of examples/echo, an application
// written only against package verbs: a server answering on one device
// and a client calling it from another. The world builds the two
// endpoints on the explorer's fabric (setup is not explored), runs the
// server as a daemon (its loop waits for the next request for ever) and
// the client as a goroutine that must finish. Every verb, every packet
// delivery and every blocking wait is a choice point.
func Example() {
	world := func(w *explore.World) {
		f := w.Fabric() // devices "a" and "b", in Manual mode
		srv, cli, err := echo.Pair(f.Devices()[0].Verbs(), f.Devices()[1].Verbs(), echo.Config{Slots: 2})
		if err != nil {
			w.Fatalf("pair: %v", err)
		}
		w.Daemon("server", func(ctx context.Context) { srv.Serve(ctx) })
		w.Go("client", func(ctx context.Context) {
			for _, msg := range []string{"ping", "pong"} {
				got, err := cli.Call(ctx, []byte(msg))
				if err != nil || string(got) != msg {
					w.Errorf("Call(%q) = %q, %v", msg, got, err)
				}
			}
		})
	}
	for _, s := range []explore.Strategy{explore.Random, explore.PCT} {
		res := explore.Explore(world, explore.Options{Strategy: s, Seed: 1, Schedules: 50})
		fmt.Println(s, res.Schedules, "schedules, failure:", res.Failure)
	}
	// Output:
	// random 50 schedules, failure: <nil>
	// pct 50 schedules, failure: <nil>
}
