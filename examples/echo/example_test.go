package echo_test

import (
	"context"
	"fmt"

	"github.com/verbsim/verbsim/examples/echo"
	"github.com/verbsim/verbsim/sim"
)

// An echo server and client on two simulated adapters. The application
// takes verbs.Device values: (*sim.Device).Verbs in tests, a libibverbs
// binding's devices in production.
func Example() {
	fab, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	if err != nil {
		panic(err)
	}
	defer fab.Close()
	srv, cli, err := echo.Pair(fab.Devices()[0].Verbs(), fab.Devices()[1].Verbs(), echo.Config{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()

	answer, err := cli.Call(ctx, []byte("hello, verbs"))
	fmt.Printf("%q %v\n", answer, err)

	cancel()
	fmt.Println("server:", <-served)
	fmt.Println("close:", cli.Close(), srv.Close())
	// Output:
	// "hello, verbs" <nil>
	// server: context canceled
	// close: <nil> <nil>
}
