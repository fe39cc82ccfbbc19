//go:build cgo && linux

package cverbs_test

import (
	"fmt"

	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/verbs"
)

// Open a device by name and register memory on it: the same verbs as on
// the simulator in process. Run it with LD_LIBRARY_PATH naming the drop-in
// library, or on a machine with an adapter or soft-RoCE ("rxe0").
func ExampleOpen() {
	dev, err := cverbs.Open("") // "" is the first device; cverbs.Devices() lists them
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := dev.Open() // ibv_open_device
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pd.Dealloc()
	buf := make([]byte, 4096)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite) // pinned until Dereg
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Dereg()
	fmt.Printf("%s: lkey %#x covers %d bytes at %#x\n", dev.Name(), mr.LKey(), mr.Length(), mr.Addr())
}
