//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/internal/hostenv"
	"github.com/verbsim/verbsim/internal/nicd"
)

func init() {
	commands = append(commands, command{"nicd", "the per-host NIC daemon the C-only libibverbs.so.1 talks to (docs/daemon.md)", nicdCmd})
}

// nicdCmd runs `verbsim nicd`: the daemon of one fabric, in the
// foreground or (-detach) started in a session of its own, which is how
// the C-only library starts it.
func nicdCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verbsim nicd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	env, envErr := hostenv.Read()
	fabric := fs.String("fabric", env.Fabric, "the fabric's name (VERBSIM_FABRIC)")
	dir := fs.String("dir", nicd.SocketDir(), "the directory of the fabric's socket (VERBSIM_NICD_DIR)")
	defLinger := 2 * time.Second
	if v := os.Getenv("VERBSIM_NICD_LINGER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim nicd: VERBSIM_NICD_LINGER=%q: want a duration\n", v)
			return 2
		}
		defLinger = d
	}
	linger := fs.Duration("linger", defLinger, "exit this long after the last program left; negative: never (VERBSIM_NICD_LINGER)")
	detach := fs.Bool("detach", false, "start the daemon in a session of its own, wait until it listens, and exit")
	readyFD := fs.Int("ready-fd", -1, "descriptor to write \"ok\" to once listening (used by -detach)")
	logFile := fs.String("log", "", "append the daemon's messages to this file (default: stderr; with -detach DIR/FABRIC.log)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim nicd [-fabric NAME] [-dir DIR] [-linger D] [-detach] [-log FILE]\n\n"+
			"The per-host NIC daemon: one simulated fabric for every C program of this user\n"+
			"that uses verbsim's C-only libibverbs.so.1, which starts it itself. The fabric\n"+
			"is configured by the VERBSIM_* environment (docs/c-programs.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if envErr != nil {
		fmt.Fprintf(stderr, "verbsim nicd: %v\n", envErr)
		return 2
	}
	if *fabric == "" {
		fmt.Fprintf(stderr, "verbsim nicd: VERBSIM_FABRIC=none names no fabric to serve\n")
		return 2
	}
	if *detach {
		return nicdDetach(fs, *fabric, *dir, *logFile, stderr)
	}
	var log io.Writer = stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim nicd: %v\n", err)
			return 1
		}
		defer f.Close()
		log = f
	}
	var ready *os.File
	if *readyFD >= 0 {
		ready = os.NewFile(uintptr(*readyFD), "ready")
	}
	fail := func(err error) int {
		if ready != nil {
			fmt.Fprintf(ready, "%v\n", err)
			ready.Close()
		}
		fmt.Fprintf(log, "verbsim nicd: %v\n", err)
		return 1
	}
	srv, err := nicd.Listen(nicd.Options{Fabric: *fabric, Dir: *dir, Linger: *linger, Env: env, Log: log})
	if err != nil {
		if ready != nil && errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintf(ready, "ok\n") // another daemon serves the fabric: join it
			ready.Close()
			return 0
		}
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	prio := "nice 0: no permission to raise it"
	if nicd.RaisePriority() {
		prio = fmt.Sprintf("nice %d", nicd.Priority)
	}
	fmt.Fprintf(log, "verbsim nicd %s: pid %d listening on %s (%d devices, profile %s, mode %v, %s)\n",
		*fabric, os.Getpid(), srv.Path(), env.Devices, env.Profile.Name, env.Mode, prio)
	if ready != nil {
		fmt.Fprintf(ready, "ok\n")
		ready.Close()
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer close(usr1)
	defer signal.Stop(usr1)
	go func() {
		for range usr1 {
			fmt.Fprintf(log, "verbsim nicd %s: dump\n%s", *fabric, srv.Dump())
		}
	}()
	if err := srv.Serve(ctx); err != nil {
		fmt.Fprintf(log, "verbsim nicd %s: %v\n", *fabric, err)
		return 1
	}
	fmt.Fprintf(log, "verbsim nicd %s: pid %d exiting\n", *fabric, os.Getpid())
	return 0
}

// nicdDetach starts the daemon as a process of its own session (so the
// starting program's signals and exit do not reach it), waits until it
// listens or fails, and reports which.
func nicdDetach(fs *flag.FlagSet, fabric, dir, logFile string, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "verbsim nicd: %v\n", err)
		return 1
	}
	if logFile == "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			fmt.Fprintf(stderr, "verbsim nicd: %v\n", err)
			return 1
		}
		logFile = filepath.Join(dir, fabric+".log")
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "verbsim nicd: %v\n", err)
		return 1
	}
	args := []string{"nicd", "-fabric", fabric, "-dir", dir, "-log", logFile, "-ready-fd", "3"}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "linger" || f.Name == "profile" {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	cmd := exec.Command(exe, args...)
	cmd.ExtraFiles = []*os.File{w}
	// The daemon's own stderr (a crash's report, the runtime's dump on
	// SIGQUIT) goes to its log as well.
	if lf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		cmd.Stderr = lf
		defer lf.Close()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "verbsim nicd: %v\n", err)
		return 1
	}
	w.Close()
	go cmd.Wait() //nolint:errcheck // reaped if it dies while we wait; otherwise it outlives us
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	r.Close()
	if msg := strings.TrimSpace(string(b)); msg != "ok" {
		if msg == "" {
			msg = "the daemon exited before it listened (see " + logFile + ")"
		}
		fmt.Fprintf(stderr, "verbsim nicd: %s\n", msg)
		return 1
	}
	return 0
}
