package simdev_test

import (
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestCapabilities: sim's verbs objects offer every optional capability of
// the suite that package doc promises, so that no case runs in a weaker
// form against the simulator.
func TestCapabilities(t *testing.T) {
	dev, err := simdev.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	must := func(ok bool, what string) {
		t.Helper()
		if !ok {
			t.Errorf("sim's %s lacks the capability", what)
		}
	}
	ch, _ := ctx.CreateCompChannel()
	q, _ := ctx.CreateCQ(8, nil, ch, 0)
	pd, _ := ctx.AllocPD()
	mr, _ := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	srq, _ := pd.CreateSRQ(verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: q, RecvCQ: q, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, ok := q.(conformance.Injector)
	must(ok, "CQ: Injector")
	_, ok = q.(conformance.Referencer)
	must(ok, "CQ: Referencer")
	_, ok = q.(verbs.ExCQ)
	must(ok, "CQ: ExCQ")
	_, ok = ch.(conformance.Depth)
	must(ok, "channel: Depth")
	_, ok = mr.(conformance.Referencer)
	must(ok, "MR: Referencer")
	_, ok = mr.(verbs.MRReregisterer)
	must(ok, "MR: verbs.MRReregisterer")
	_, ok = qp.(conformance.Outstander)
	must(ok, "QP: Outstander")
	_, ok = qp.(conformance.FatalInjector)
	must(ok, "QP: FatalInjector")
	_, ok = qp.(conformance.StatusForcer)
	must(ok, "QP: StatusForcer")
	_, ok = srq.(conformance.Depth)
	must(ok, "SRQ: Depth")
	_, ok = srq.(conformance.Consumer)
	must(ok, "SRQ: Consumer")
	_, ok = srq.(conformance.SRQErrorInjector)
	must(ok, "SRQ: SRQErrorInjector")
	for what, ok := range map[string]bool{
		"ExQuerier":   is[verbs.ExQuerier](ctx),
		"ExCQCreator": is[verbs.ExCQCreator](ctx),
		"XRCOpener":   is[verbs.XRCOpener](ctx),
		"QPExCreator": is[verbs.QPExCreator](pd),
	} {
		must(ok, what)
	}
}

func is[I any](v any) bool {
	_, ok := v.(I)
	return ok
}
