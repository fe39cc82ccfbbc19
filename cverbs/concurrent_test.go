//go:build cgo && linux

package cverbs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/verbs"
)

// loopbackRC connects an RC QP to itself on port 1 of c, with cq for both
// queues.
func loopbackRC(c verbs.Context, pd verbs.PD, cq verbs.CQ) (verbs.QP, error) {
	q, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return nil, err
	}
	pa, err := c.QueryPort(1)
	if err != nil {
		return nil, err
	}
	gid, err := c.QueryGID(1, 0)
	if err != nil {
		return nil, err
	}
	av := verbs.AHAttr{DLID: pa.LID, PortNum: 1}
	if pa.LinkLayer == verbs.LinkLayerEthernet {
		av.IsGlobal, av.GRH = true, verbs.GlobalRoute{DGID: gid, HopLimit: 1}
	}
	steps := []struct {
		a    verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags},
		{verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPNum: q.Num(), MaxDestRDAtomic: 1, MinRNRTimer: 12, AHAttr: av},
			verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN | verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer},
		{verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1},
			verbs.QPAttrState | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrSQPSN | verbs.QPAttrMaxQPRDAtomic},
	}
	for _, s := range steps {
		if err := q.Modify(&s.a, s.mask); err != nil {
			return nil, fmt.Errorf("to %v: %w", s.a.QPState, err)
		}
	}
	return q, nil
}

// roundTrips runs n SEND/RECV round trips on a loopback RC QP of its own,
// waiting for every completion with ibv_get_cq_event (GetEvent).
func roundTrips(ctx context.Context, c verbs.Context, n int) error {
	ch, err := c.CreateCompChannel()
	if err != nil {
		return err
	}
	defer ch.Destroy()
	cq, err := c.CreateCQ(64, nil, ch, 0)
	if err != nil {
		return err
	}
	defer cq.DestroyContext(ctx)
	pd, err := c.AllocPD()
	if err != nil {
		return err
	}
	defer pd.Dealloc()
	buf := make([]byte, 128)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer mr.Dereg()
	q, err := loopbackRC(c, pd, cq)
	if err != nil {
		return err
	}
	defer q.DestroyContext(ctx)
	wcs := make([]verbs.WC, 4)
	for i := range n {
		copy(buf[:64], fmt.Sprintf("message %d", i))
		if _, err := q.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{{Addr: mr.Addr() + 64, Length: 64, LKey: mr.LKey()}}}}); err != nil {
			return err
		}
		if err := cq.ReqNotify(false); err != nil {
			return err
		}
		if _, err := q.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 64, LKey: mr.LKey()}}}}); err != nil {
			return err
		}
		for got := 0; got < 2; {
			ecq, _, err := ch.GetEvent(ctx)
			if err != nil {
				return err
			}
			if ecq != cq {
				return errors.New("the event names another CQ")
			}
			if err := cq.AckEvents(1); err != nil {
				return err
			}
			if err := cq.ReqNotify(false); err != nil {
				return err
			}
			for {
				k, err := cq.Poll(wcs)
				if err != nil {
					return err
				}
				if k == 0 {
					break
				}
				for _, w := range wcs[:k] {
					if w.Status != verbs.WCSuccess || w.WRID != uint64(i) {
						return fmt.Errorf("round trip %d: completion %+v", i, w)
					}
				}
				got += k
			}
		}
		if !bytes.Equal(buf[64:128], buf[:64]) {
			return fmt.Errorf("round trip %d: received %q", i, buf[64:128])
		}
	}
	return nil
}

// TestConcurrentDevice runs 4 goroutines of 200 round trips each on the
// device CVERBS_CONCURRENT, all on one context, then checks that a
// GetEvent with nothing to come ends with its context. It runs only when
// CVERBS_CONCURRENT is set (TestConcurrentThroughC's child, or by hand).
func TestConcurrentDevice(t *testing.T) {
	name, ok := os.LookupEnv("CVERBS_CONCURRENT")
	if !ok {
		t.Skip("CVERBS_CONCURRENT is not set")
	}
	d, err := cverbs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- roundTrips(ctx, c, 200) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Destroy()
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if _, _, err := ch.GetEvent(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetEvent on an idle channel whose context ends: %v, want context.DeadlineExceeded", err)
	}
}

// TestConcurrentThroughC runs TestConcurrentDevice in a child process on
// the drop-in library, under each profile.
func TestConcurrentThroughC(t *testing.T) {
	if os.Getenv("CVERBS_CONCURRENT") != "" || os.Getenv("CVERBS_DEVICE") != "" || os.Getenv("CVERBS_ECHO") != "" {
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
		cmd := exec.Command(self, "-test.run=^TestConcurrentDevice$", "-test.v", "-test.count=1", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), "CVERBS_CONCURRENT=sim0", "VERBSIM_PROFILE="+prof,
			"VERBSIM_FABRIC=none", "LD_LIBRARY_PATH="+dir+string(filepath.ListSeparator)+os.Getenv("LD_LIBRARY_PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestConcurrentDevice")) {
			t.Errorf("profile %s: concurrent round trips through C failed (%v):\n%s", prof, err, tail(out, 40))
		}
	}
}
