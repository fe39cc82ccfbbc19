package sim_test

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// A server exposes 16 bytes of a larger buffer through a type 1 memory
// window, lets its peer write there, and revokes the access by
// deallocating the window.
func ExamplePD_AllocMW() {
	fabric, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "client"}, {Name: "server"}}})
	side := func(name string) (*sim.PD, *sim.CQ, *sim.QP) {
		dev, _ := fabric.Device(name)
		vctx, _ := dev.Open()
		pd, _ := vctx.AllocPD()
		cq, _ := vctx.CreateCQ(16, nil, nil, 0)
		q, _ := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
		return pd, cq, q
	}
	cpd, ccq, cqp := side("client")
	spd, scq, sqp := side("server")
	sim.Connect(cqp, sqp, sim.ConnectOptions{})

	// The server's MR allows binding windows; it grants no remote access.
	mem := make([]byte, 4096)
	mr, _ := spd.RegMR(mem, verbs.AccessLocalWrite|verbs.AccessMWBind)
	mw, _ := spd.AllocMW(verbs.MWType1)
	sqp.BindMW(mw, 1, verbs.SendSignaled, verbs.MWBindInfo{MR: mr, Addr: mr.Addr() + 100, Length: 16, Access: verbs.AccessRemoteWrite})
	wcs := make([]verbs.WC, 1)
	scq.Poll(wcs)
	fmt.Println("bind:", wcs[0].Opcode, wcs[0].Status.Name())

	// The client writes through the window's rkey, inside and then past it.
	src := []byte("hello, window!")
	smr, _ := cpd.RegMR(src, 0)
	write := func(id uint64, at uint64) {
		cqp.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGList:     []verbs.SGE{{Addr: smr.Addr(), Length: uint32(len(src)), LKey: smr.LKey()}},
			RemoteAddr: at, RKey: mw.RKey()}})
		ccq.Poll(wcs)
		fmt.Println("write", id, wcs[0].Status.Name())
	}
	write(2, mr.Addr()+100)
	fmt.Printf("%q\n", mem[100:114])
	write(3, mr.Addr()+104) // 14 bytes from offset 4 leave the 16-byte window

	fmt.Println(mr.Dereg()) // the window holds the MR
	mw.Dealloc()
	fmt.Println(mr.Dereg())
	// Output:
	// bind: IBV_WC_BIND_MW IBV_WC_SUCCESS
	// write 2 IBV_WC_SUCCESS
	// "hello, window!"
	// write 3 IBV_WC_REM_ACCESS_ERR
	// ibv_dereg_mr: EBUSY (device or resource busy): 1 memory window(s) are bound to the MR (MR-06)
	// <nil>
}
