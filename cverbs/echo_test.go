//go:build cgo && linux

package cverbs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/examples/echo"
)

// TestEchoDevices runs examples/echo, an application written against the
// verbs interfaces only, through the binding: a server on CVERBS_ECHO's
// first device and a client on its second (names separated by a comma).
// It runs only when CVERBS_ECHO is set: as TestEchoThroughC's child, or by
// hand on two real ports ("mlx5_0,mlx5_1").
func TestEchoDevices(t *testing.T) {
	names, ok := os.LookupEnv("CVERBS_ECHO")
	if !ok {
		t.Skip("CVERBS_ECHO is not set")
	}
	a, b, _ := strings.Cut(names, ",")
	srvDev, err := cverbs.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	cliDev, err := cverbs.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	srv, cli, err := echo.Pair(srvDev, cliDev, echo.Config{})
	if err != nil {
		t.Fatalf("echo.Pair: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	for i := range 100 {
		msg := []byte(fmt.Sprintf("hello, verbs through C #%d", i))
		got, err := cli.Call(ctx, msg)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("call %d: %q, %v; want %q", i, got, err, msg)
		}
	}
	cancel()
	if err := <-served; err != context.Canceled {
		t.Errorf("Serve: %v, want context.Canceled", err)
	}
	if err := cli.Close(); err != nil {
		t.Errorf("client Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("server Close: %v", err)
	}
}

// TestEchoThroughC runs TestEchoDevices in a child process on the drop-in
// library with two simulated adapters, sim0 and sim1, under each profile.
func TestEchoThroughC(t *testing.T) {
	if os.Getenv("CVERBS_ECHO") != "" || os.Getenv("CVERBS_DEVICE") != "" {
		t.Skip("running as a child process")
	}
	if testing.Short() {
		t.Skip("-short: builds the drop-in library")
	}
	dir := dropIn(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, prof := range []string{"default", "rxe"} {
		cmd := exec.Command(self, "-test.run=^TestEchoDevices$", "-test.v", "-test.count=1", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), "CVERBS_ECHO=sim0,sim1", "VERBSIM_DEVICES=2", "VERBSIM_PROFILE="+prof,
			"VERBSIM_FABRIC=none", "LD_LIBRARY_PATH="+dir+string(filepath.ListSeparator)+os.Getenv("LD_LIBRARY_PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestEchoDevices")) {
			t.Errorf("profile %s: examples/echo through C failed (%v):\n%s", prof, err, tail(out, 40))
		}
	}
}
