package sim_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Device memory: allocate 100 bytes on the adapter, copy in and out in
// 4-byte multiples, and register an MR on part of it for work requests,
// which address it from 0. The memory cannot be freed while the MR exists.
func ExampleContext_AllocDM() {
	fabric, _ := sim.NewFabric(sim.Config{})
	ctx, _ := fabric.Devices()[0].Open()
	defer ctx.Close()
	ax, _ := ctx.QueryDeviceEx(0)
	fmt.Println("max_dm_size", ax.MaxDMSize)

	dm, _ := ctx.AllocDM(verbs.AllocDMAttr{Length: 100})
	fmt.Println(dm.MemcpyTo(8, []byte("on chip!")))
	out := make([]byte, 8)
	fmt.Println(dm.MemcpyFrom(out, 8), string(out))
	err := dm.MemcpyTo(2, []byte("odd!"))
	fmt.Println(errors.Is(err, syscall.EINVAL))

	pd, _ := ctx.AllocPD()
	mr, _ := pd.RegDMMR(dm, 8, 64, verbs.AccessZeroBased|verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	fmt.Println(mr.Addr(), mr.Length(), errors.Is(dm.Free(), syscall.EBUSY))
	fmt.Println(mr.Dereg(), dm.Free(), pd.Dealloc())
	// Output:
	// max_dm_size 131072
	// <nil>
	// <nil> on chip!
	// true
	// 0 64 true
	// <nil> <nil> <nil>
}
