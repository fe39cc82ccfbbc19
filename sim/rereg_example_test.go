package sim_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Re-registering an MR: new access flags, then a move to another PD. Under
// the default profile each success gives new keys, so a program reads them
// again; a refused call says by its class whether the MR may still be used.
func ExampleMR_Rereg() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	defer vctx.Close()
	pd, _ := vctx.AllocPD()
	pd2, _ := vctx.AllocPD()
	mr, _ := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	oldRKey := mr.RKey()

	// Peers may only read from now on.
	err := mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	fmt.Println(err, mr.Access(), mr.RKey() != oldRKey)

	// An input error: the MR is unchanged and still valid.
	err = mr.Rereg(verbs.ReregChangePD, pd2, nil, verbs.AccessLocalWrite)
	fmt.Println(errors.Is(err, syscall.EINVAL), sim.ReregFailureOf(err), sim.ReregFailureOf(err).MRUsable())

	// Move it to pd2: pd can now be deallocated.
	err = mr.Rereg(verbs.ReregChangePD, pd2, nil, 0)
	fmt.Println(err, mr.PD() == pd2, pd.Dealloc())

	// A command error: the MR should not be used any more, only deregistered.
	err = mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessRemoteWrite)
	fmt.Println(sim.ReregFailureOf(err), sim.ReregFailureOf(err).MRUsable(), mr.Dereg(), pd2.Dealloc())
	// Output:
	// <nil> LOCAL_WRITE|REMOTE_READ true
	// true IBV_REREG_MR_ERR_INPUT true
	// <nil> true <nil>
	// IBV_REREG_MR_ERR_CMD false <nil> <nil>
}
