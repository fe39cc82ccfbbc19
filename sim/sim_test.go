package sim_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func open(t testing.TB, cfg sim.Config) *sim.Context {
	t.Helper()
	f, err := sim.NewFabric(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func TestFabricConfig(t *testing.T) {
	for name, cfg := range map[string]sim.Config{
		"unnamed":   {Devices: []sim.DeviceConfig{{}}},
		"duplicate": {Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "a"}}},
		"bad attr":  {Devices: []sim.DeviceConfig{{Name: "a", Attr: verbs.DeviceAttr{MaxCQ: 1}}}},
	} {
		if _, err := sim.NewFabric(cfg); err == nil {
			t.Errorf("%s: NewFabric accepted %+v", name, cfg)
		}
	}
	f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Devices()) != 2 || f.Devices()[1].Name() != "b" || f.Profile().Name != "default" {
		t.Fatalf("devices %v, profile %v", f.Devices(), f.Profile())
	}
	if f.Devices()[0].GUID() == f.Devices()[1].GUID() {
		t.Fatal("two devices share a GUID")
	}
	if _, err := f.Device("nope"); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("Device(nope): %v, want ENODEV", err)
	}
	if d, err := f.Device("b"); err != nil || d.Fabric() != f {
		t.Fatalf("Device(b): %v, %v", d, err)
	}
}

// TestMaxCQ: the device-wide max_cq gives ENOMEM (CQ-06) and destroying a CQ
// frees its slot, across contexts.
func TestMaxCQ(t *testing.T) {
	f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "small",
		Attr: verbs.DeviceAttr{MaxCQ: 2, MaxCQE: 16, NumCompVectors: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	d := f.Devices()[0]
	c1, _ := d.Open()
	c2, _ := d.Open()
	a, err := c1.CreateCQ(4, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CreateCQ(4, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CreateCQ(4, nil, nil, 0); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("third CQ: %v, want ENOMEM", err)
	}
	if _, err := c1.CreateCQ(17, nil, nil, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("cqe above max_cqe: %v, want EINVAL", err)
	}
	if err := a.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CreateCQ(4, nil, nil, 0); err != nil {
		t.Fatalf("CQ after a destroy: %v", err)
	}
	if err := c1.Close(); err != nil {
		t.Fatalf("closing a context whose CQs are gone: %v", err)
	}
	if err := c2.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("closing a context with live CQs: %v, want EBUSY", err)
	}
	if _, err := c1.CreateCQ(1, nil, nil, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("CreateCQ on a closed context: %v, want EINVAL", err)
	}
	if _, err := c1.CreateCompChannel(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("CreateCompChannel on a closed context: %v, want EINVAL", err)
	}
	if _, err := c1.QueryDevice(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("QueryDevice on a closed context: %v, want EINVAL", err)
	}
	if err := c1.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("second Close: %v, want EINVAL", err)
	}
}

// TestProfilesReachTheCQ: the fabric's profile decides the overrun reading
// (CQ-23) and the solicited reading (NOTIFY-05).
func TestProfilesReachTheCQ(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := open(t, sim.Config{Profile: p})
			ch, _ := ctx.CreateCompChannel()
			q, err := ctx.CreateCQEx(sim.CQInitAttr{CQE: 1, Channel: ch})
			if err != nil {
				t.Fatal(err)
			}
			q.ReqNotify(true)
			q.Push(verbs.WC{WRID: 1, Status: verbs.WCWRFlushErr}, false) // send-side flush
			_, _, err = ch.TryGetEvent()
			fired := err == nil
			if want := p.Name == "default"; fired != want {
				t.Fatalf("flush fired a solicited arm: %v, want %v", fired, want)
			}
			if fired {
				q.AckEvents(1)
			}
			q.Push(verbs.WC{WRID: 2}, false) // overrun
			ev, err := ctx.TryGetAsyncEvent()
			if err != nil || ev.Type() != verbs.EventCQErr || ev.CQ() != q {
				t.Fatalf("async event %v, %v", ev, err)
			}
			ev.Ack()
			q.Poll(make([]verbs.WC, 2))
			over, _ := q.Push(verbs.WC{WRID: 3}, false)
			if want := p.Name == "default"; over != want {
				t.Fatalf("push after drain overran: %v, want %v", over, want)
			}
		})
	}
	if s := sim.RXEProfile().String(); s != "rxe (OverrunDrops OverrunSendIgnored NoCQTimestamps SolicitedBitOnly CurStateTrusted FreeSlotOnRetire TransportOpLocQPOp SendOpsRXE SRQLimitAtCreate SRQRecvQPPD NoXRC NoDM DeregBoundEINVAL ReregFailKeepsMR ReregKeepsKeys ReregNoTranslation NoODP MWType1NoZeroBased RecvTooSmallRemInvReq InfiniteRetry7 RecvProtQPOp WriteImmRKeyRemAccess LateLocalCheck SendInvErrAcked NoSQE SendWCImm NoQPEvents AlwaysSQDrained NoFlowLabel)" {
		t.Fatalf("RXEProfile().String() = %q", s)
	}
}

func TestAsyncBlocking(t *testing.T) {
	ctx := open(t, sim.Config{})
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ctx.GetAsyncEvent(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetAsyncEvent with a cancelled context: %v", err)
	}
	if len(ctx.PendingAsyncEvents()) != 0 || ctx.NumCompVectors() != 4 {
		t.Fatal("fresh context not empty")
	}
}

// TestNilHandles: every verb on a nil handle returns EINVAL and nothing
// panics.
func TestNilHandles(t *testing.T) {
	var (
		d   *sim.Device
		c   *sim.Context
		q   *sim.CQ
		ch  *sim.CompChannel
		buf = make([]verbs.WC, 2)
	)
	_, errOpen := d.Open()
	_, errQuery := c.QueryDevice()
	_, errChan := c.CreateCompChannel()
	_, errCQ := c.CreateCQ(1, nil, nil, 0)
	_, errGet := c.GetAsyncEvent(context.Background())
	_, errTry := c.TryGetAsyncEvent()
	n, errPoll := q.Poll(buf)
	_, errPush := q.Push(verbs.WC{}, false)
	_, _, errEv := ch.GetEvent(context.Background())
	_, _, errTryEv := ch.TryGetEvent()
	for name, err := range map[string]error{
		"Open": errOpen, "QueryDevice": errQuery, "CreateCompChannel": errChan, "CreateCQ": errCQ,
		"GetAsyncEvent": errGet, "TryGetAsyncEvent": errTry, "Close": c.Close(),
		"Poll": errPoll, "ReqNotify": q.ReqNotify(false), "AckEvents": q.AckEvents(1), "Resize": q.Resize(4),
		"Destroy": q.Destroy(), "Push": errPush, "Ref": q.Ref(),
		"GetEvent": errEv, "TryGetEvent": errTryEv, "channel Destroy": ch.Destroy(),
	} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s on nil: %v, want EINVAL", name, err)
		}
	}
	q.Unref()
	if n != 0 || q.CQE() != 0 || q.Len() != 0 || q.Context() != nil || q.Channel() != nil ||
		q.Destroyed() || q.Overrun() || q.Armed() != sim.CQDisarmed || ch.Len() != 0 || ch.Destroyed() {
		t.Fatal("nil handle inspection returned non-zero values")
	}
}
