package patterns

import (
	"context"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// rcEnd is one side of an RC connection of the catalogue: a QP whose send
// and receive CQ is on a completion channel of its own, and a buffer.
type rcEnd struct {
	ch *sim.CompChannel
	cq *sim.CQ
	qp *sim.QP
	mr *sim.MR
}

// openRC opens an end on d with room for n work requests each way.
func openRC(w *explore.World, d *sim.Device, n int) *rcEnd {
	ctx, err := d.Open()
	if err != nil {
		w.Fatalf("open: %v", err)
	}
	pd, _ := ctx.AllocPD()
	e := &rcEnd{}
	e.ch, _ = ctx.CreateCompChannel()
	if e.cq, err = ctx.CreateCQ(2*n, d.Name(), e.ch, 0); err != nil {
		w.Fatalf("create_cq: %v", err)
	}
	e.mr, _ = pd.RegMR(make([]byte, 64*n), verbs.AccessLocalWrite)
	e.qp, err = pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: uint32(n), MaxRecvWR: uint32(n), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		w.Fatalf("create_qp: %v", err)
	}
	if err := e.cq.ReqNotify(false); err != nil {
		w.Fatalf("req_notify_cq: %v", err)
	}
	return e
}

// RCStream is an RC stream of n messages from a client on device "a" to a
// server on device "b": the server's receives are posted ahead, the client
// posts n signaled SENDs one verb each, and each side runs the recipe on
// its own channel until its n completions came (every one SUCCESS). Every
// packet, ACK and completion is a step of the engine.
func RCStream(n int) func(*explore.World) {
	return func(w *explore.World) {
		f, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
		if err != nil {
			w.Fatalf("fabric: %v", err)
		}
		client, server := openRC(w, f.Devices()[0], n), openRC(w, f.Devices()[1], n)
		if err := sim.Connect(client.qp, server.qp, sim.ConnectOptions{}); err != nil {
			w.Fatalf("connect: %v", err)
		}
		for i := range n {
			sge := verbs.SGE{Addr: server.mr.Addr() + uint64(64*i), Length: 64, LKey: server.mr.LKey()}
			if _, err := server.qp.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{sge}}}); err != nil {
				w.Fatalf("post_recv: %v", err)
			}
		}
		w.Go("client", func(ctx context.Context) {
			for i := range n {
				sge := verbs.SGE{Addr: client.mr.Addr() + uint64(64*i), Length: 64, LKey: client.mr.LKey()}
				wr := verbs.SendWR{WRID: uint64(100 + i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{sge}}
				if _, err := client.qp.PostSend([]verbs.SendWR{wr}); err != nil {
					w.Errorf("post_send: %v", err)
					return
				}
			}
			if got := recipe(ctx, w, client.ch, n); got != n {
				w.Errorf("client got %d completions, want %d", got, n)
			}
		})
		w.Go("server", func(ctx context.Context) {
			if got := recipe(ctx, w, server.ch, n); got != n {
				w.Errorf("server got %d completions, want %d", got, n)
			}
		})
	}
}
