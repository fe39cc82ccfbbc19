package pingpong

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/internal/leakcheck"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// roundTrips is the length of the acceptance runs: 10,000 round trips, or
// 2,000 under the race detector.
//
// Four runs of 10,000 take about 2.5 s without -race. Under -race they
// take about 9 s on an idle two-core machine, and twice that when other
// test binaries share the cores, as they do under go test -race ./...:
// the busy-polling runs spin through every ACK timeout, and each spin is
// slowed down by the detector and by the competition for the processors.
// The race detector looks for unsynchronized memory accesses, which 2,000
// round trips (some 1,200 lost packets and 500 retransmission timeouts
// per faulty run) exercise as well as
// 10,000; the full count runs without it.
func roundTrips() int {
	if raceEnabled {
		return 2_000
	}
	return 10_000
}

// expectedDigest computes, without any fabric, the Result.Digest of a
// complete run: each side's SHA-256 over the messages of the other, in
// order.
func expectedDigest(cfg Config) [sha256.Size]byte {
	msg := make([]byte, cfg.Size)
	var sides [2][sha256.Size]byte
	for i, from := range []Side{Server, Client} { // the client receives the server's messages
		h := sha256.New()
		for it := range cfg.Iters {
			Message(msg, cfg.Seed, from, uint64(it))
			h.Write(msg)
		}
		h.Sum(sides[i][:0])
	}
	var out [sha256.Size]byte
	h := sha256.New()
	h.Write(sides[0][:])
	h.Write(sides[1][:])
	h.Sum(out[:0])
	return out
}

func run(t *testing.T, cfg Config) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: %v", describe(cfg), err)
	}
	return r
}

func describe(cfg Config) string {
	mode := "polling"
	if cfg.Events {
		mode = "events"
	}
	return mode + " drop=" + ftoa(cfg.Drop) + " dup=" + ftoa(cfg.Duplicate)
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// TestIdenticalDeliveryUnderFaults runs roundTrips() round trips busy-polling
// and with completion events, each without faults and with 5% of the
// packets dropped and 5% duplicated, and checks that all four runs
// delivered exactly the same bytes in the same order (the bytes the
// generator says), and that the faults really fired: RC hid them.
func TestIdenticalDeliveryUnderFaults(t *testing.T) {
	// Under the default profile retry_cnt = 7 allows seven retransmissions
	// after an ACK timeout. At 5% loss each way an attempt ends in a
	// timeout with p ≈ 0.1 (the message's last packet or its ACK is lost;
	// an earlier loss is caught by a sequence NAK, which costs no retry),
	// so a message exhausts its retries with p ≈ 1e-8, and this test would
	// fail about once in 3,000 runs with a (correct) RETRY_EXC_ERR. The rxe reading of retry_cnt = 7, retry
	// without limit (XFER-10 B), takes that chance away and changes
	// nothing else here.
	profile := sim.DefaultProfile()
	profile.Name = "default, retry_cnt=7 without limit"
	profile.InfiniteRetry7 = true

	iters := roundTrips()
	base := Config{Iters: iters, Size: 1000, MTU: verbs.MTU256, Seed: 42, Profile: profile} // 4 packets a message
	want := expectedDigest(base)
	var results []Result
	for _, faulty := range []bool{false, true} {
		for _, events := range []bool{false, true} {
			cfg := base
			cfg.Events = events
			if faulty {
				cfg.Drop, cfg.Duplicate = 0.05, 0.05
			}
			r := run(t, cfg)
			name := describe(cfg)
			t.Logf("%-24s wall %-8v virtual %-8v %+v", name, r.Wall.Round(time.Millisecond), r.Virtual.Round(time.Millisecond), r.Stats)
			if r.RoundTrips != iters || r.Bytes != int64(2*iters*cfg.Size) {
				t.Errorf("%s: %d round trips, %d bytes; want %d, %d", name, r.RoundTrips, r.Bytes, iters, 2*iters*cfg.Size)
			}
			for _, s := range []SideStats{r.Client, r.Server} {
				if s.Sent != iters || s.Received != iters || s.SendsCompleted != iters {
					t.Errorf("%s: side %+v", name, s)
				}
			}
			if r.Digest != want {
				t.Errorf("%s: digest %x, want %x", name, r.Digest, want)
			}
			st := r.Stats
			if faulty {
				if st.Dropped == 0 || st.Duplicated == 0 || st.Timers == 0 {
					t.Errorf("%s: the faults did not fire: %+v", name, st)
				}
			} else if st.Dropped != 0 || st.Duplicated != 0 || st.Timers != 0 {
				t.Errorf("%s: faults without faults: %+v", name, st)
			}
			if events != (r.Client.Events > 0 && r.Server.Events > 0) {
				t.Errorf("%s: completion events client %d, server %d", name, r.Client.Events, r.Server.Events)
			}
			results = append(results, r)
		}
	}
	for _, r := range results[1:] {
		if r.Client.Digest != results[0].Client.Digest || r.Server.Digest != results[0].Server.Digest ||
			r.Bytes != results[0].Bytes || r.RoundTrips != results[0].RoundTrips {
			t.Errorf("%s delivered something else than %s", describe(r.Config), describe(results[0].Config))
		}
	}
}

// TestDefaults: the zero Config is rc_pingpong's defaults.
func TestDefaults(t *testing.T) {
	r := run(t, Config{Iters: 50})
	c := r.Config
	if c.Size != 4096 || c.RXDepth != 500 || c.MTU != verbs.MTU1024 || c.Timeout != DefaultTimeout {
		t.Errorf("defaults %+v", c)
	}
	if r.Bytes != 2*50*4096 || r.Digest != expectedDigest(c) {
		t.Errorf("bytes %d, digest %x", r.Bytes, r.Digest)
	}
	if r.Client.Device == r.Server.Device || r.Client.LID == r.Server.LID || r.Client.QPN == 0 {
		t.Errorf("client %+v server %+v", r.Client, r.Server)
	}
	if r.USecPerIter() <= 0 || r.MbitPerSec() <= 0 || r.Virtual <= 0 {
		t.Errorf("rates %v µs/iter, %v Mbit/s, virtual %v", r.USecPerIter(), r.MbitPerSec(), r.Virtual)
	}
}

// TestSmallReceiveDepth: one posted receive is enough for a ping-pong,
// since a side reposts before it answers.
func TestSmallReceiveDepth(t *testing.T) {
	for _, events := range []bool{false, true} {
		cfg := Config{Iters: 200, Size: HeaderSize, RXDepth: 1, Events: events, Seed: 3}
		if r := run(t, cfg); r.Digest != expectedDigest(r.Config) {
			t.Errorf("%s: digest differs", describe(cfg))
		}
	}
}

// TestReordering: delayed packets overtake one another inside a
// multi-packet message; the responder NAKs the gap, the requester goes back
// and the data still arrives whole and in order.
func TestReordering(t *testing.T) {
	for _, events := range []bool{false, true} {
		cfg := Config{Iters: 1000, Size: 1000, MTU: verbs.MTU256, Delay: 0.3, Events: events, Seed: 5}
		r := run(t, cfg)
		if r.Digest != expectedDigest(r.Config) || r.Stats.Delayed == 0 {
			t.Errorf("%s delay=0.3: digest %x, %+v", describe(cfg), r.Digest, r.Stats)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Iters: -1},
		{Size: HeaderSize - 1},
		{RXDepth: -5},
		{MTU: 9},
		{Drop: 1},
		{Drop: -0.1},
		{Duplicate: 2},
		{Delay: -1},
		{Timeout: 32},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	// Beyond the device's limits, or too much memory.
	for _, cfg := range []Config{{RXDepth: 1 << 20}, {Size: 1<<30 + 1}, {RXDepth: 30000, Size: 1 << 20}} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// TestContextEndsTheRun: the context bounds a run in either mode; every
// goroutine has ended when Run returns.
func TestContextEndsTheRun(t *testing.T) {
	for _, events := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		r, err := Run(ctx, Config{Iters: 1 << 30, Size: 64, Events: events})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("events=%v: %v", events, err)
		}
		if r.RoundTrips >= 1<<30 {
			t.Errorf("events=%v: %d round trips", events, r.RoundTrips)
		}
	}
	// Run's goroutines have signalled they are done when it returns, but
	// may not have returned yet: wait for them, do not count them.
	if left := leakcheck.Wait(); left != "" {
		t.Errorf("goroutines outlive Run:\n%s", left)
	}
}

// TestRetryExceeded: under the default profile a hopeless link ends the
// run with the completion error, not a hang.
func TestRetryExceeded(t *testing.T) {
	for _, events := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := Run(ctx, Config{Iters: 1000, Size: 64, Drop: 0.9, Events: events})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "IBV_WC_RETRY_EXC_ERR") {
			t.Errorf("events=%v: %v", events, err)
		}
	}
}

// TestMessage: the payload depends on the seed, the side and the
// iteration, and the check names what is wrong.
func TestMessage(t *testing.T) {
	a, b := make([]byte, 61), make([]byte, 61)
	Message(a, 1, Client, 7)
	Message(b, 1, Client, 7)
	if string(a) != string(b) {
		t.Fatal("not deterministic")
	}
	for _, v := range []struct {
		seed uint64
		side Side
		iter uint64
	}{{2, Client, 7}, {1, Server, 7}, {1, Client, 8}} {
		Message(b, v.seed, v.side, v.iter)
		if string(a[HeaderSize:]) == string(b[HeaderSize:]) {
			t.Errorf("%+v: same payload as (1, client, 7)", v)
		}
	}

	s := &side{who: Server, cfg: Config{Size: 61, Seed: 1}, received: 7, expect: make([]byte, 61)}
	Message(s.expect, 1, Client, 7)
	for _, tt := range []struct {
		msg  func([]byte)
		want string
	}{
		{func(m []byte) {}, ""},
		{func(m []byte) { Message(m, 1, Client, 6) }, "number 6 (lost, duplicated or reordered"},
		{func(m []byte) { Message(m, 1, Server, 7) }, "comes from side server"},
		{func(m []byte) { m[0] ^= 1 }, "bad magic"},
		{func(m []byte) { m[40] ^= 1 }, "differs at byte 40"},
	} {
		m := make([]byte, 61)
		Message(m, 1, Client, 7)
		tt.msg(m)
		err := s.check(m)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("check: %v, want %q", err, tt.want)
		}
	}
	if Client.String() != "client" || Server.String() != "server" || Side(5).String() != "Side(5)" {
		t.Error("Side.String")
	}
}
