package sim

import (
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

func (p *port) entry(i int) verbs.GIDEntry {
	t := verbs.GIDTypeIB
	if p.attr.LinkLayer == verbs.LinkLayerEthernet {
		t = verbs.GIDTypeRoCEv2
	}
	return verbs.GIDEntry{GID: p.gids[i], GIDIndex: uint32(i), PortNum: uint32(p.num), GIDType: t}
}

// QueryGIDEx returns entry index of port num's GID table with its type
// (ibv_query_gid_ex). flags must be 0 (EINVAL otherwise, as the kernel
// refuses unknown flags); a port outside [1, phys_port_cnt] or an index
// outside [0, gid_tbl_len) is EINVAL; an index inside the table that holds
// no GID is ENODATA, where ibv_query_gid reads the zero GID (QUERY-05).
func (c *Context) QueryGIDEx(num, index, flags uint32) (verbs.GIDEntry, error) {
	const verb = "ibv_query_gid_ex"
	if c == nil {
		return verbs.GIDEntry{}, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked(verb); err != nil {
		return verbs.GIDEntry{}, err
	}
	if flags != 0 {
		return verbs.GIDEntry{}, verr.Errorf(verb, syscall.EINVAL, "flags %#x: none are defined (QUERY-05)", flags)
	}
	if num == 0 || num > uint32(len(c.dev.ports)) {
		return verbs.GIDEntry{}, verr.Errorf(verb, syscall.EINVAL, "port %d is outside [1, phys_port_cnt=%d] (QUERY-05)", num, len(c.dev.ports))
	}
	p := c.dev.ports[num-1]
	if index >= uint32(len(p.gids)) {
		return verbs.GIDEntry{}, verr.Errorf(verb, syscall.EINVAL, "index %d is outside [0, gid_tbl_len=%d) (QUERY-05)", index, len(p.gids))
	}
	if p.gids[index].IsZero() {
		return verbs.GIDEntry{}, verr.Errorf(verb, syscall.ENODATA, "entry %d of port %d holds no GID (QUERY-05)", index, num)
	}
	return p.entry(int(index)), nil
}

// QueryGIDTable returns the valid entries of every port's GID table, port 1
// first and each port's entries in index order (ibv_query_gid_table).
// maxEntries is the room the caller has: 0, or fewer than the valid
// entries, is EINVAL, as are flags other than 0 (QUERY-06). The C call
// returns the count; here it is the length of the slice.
func (c *Context) QueryGIDTable(maxEntries int, flags uint32) ([]verbs.GIDEntry, error) {
	const verb = "ibv_query_gid_table"
	if c == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked(verb); err != nil {
		return nil, err
	}
	if flags != 0 {
		return nil, verr.Errorf(verb, syscall.EINVAL, "flags %#x: none are defined (QUERY-06)", flags)
	}
	if maxEntries <= 0 {
		return nil, verr.Errorf(verb, syscall.EINVAL, "max_entries %d: room for at least one entry is needed (QUERY-06)", maxEntries)
	}
	var out []verbs.GIDEntry
	for _, p := range c.dev.ports {
		for i, g := range p.gids {
			if g.IsZero() {
				continue
			}
			if len(out) == maxEntries {
				return nil, verr.Errorf(verb, syscall.EINVAL, "more than max_entries=%d valid GIDs (QUERY-06)", maxEntries)
			}
			out = append(out, p.entry(i))
		}
	}
	return out, nil
}

// QueryDeviceEx is ibv_query_device_ex. compMask is the comp_mask of
// struct ibv_query_device_ex_input (0 for a NULL input): libibverbs
// defines no bit of it and refuses any with EINVAL (QUERY-03). Unless the
// profile has CQNoTimestamps, completion_timestamp_mask and hca_core_clock
// are the device's (DeviceAttr.CompletionTimestampMask, HCACoreClock), the
// clock of the completion timestamps; max_dm_size is DeviceAttr.MaxDMSize
// (DM-01, DM-02); odp_caps and xrc_odp_caps are the profile's (ODP-01);
// every other extended capability reads zero.
func (c *Context) QueryDeviceEx(compMask uint32) (verbs.DeviceAttrEx, error) {
	const verb = "ibv_query_device_ex"
	if c == nil {
		return verbs.DeviceAttrEx{}, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	if compMask != 0 {
		return verbs.DeviceAttrEx{}, verr.Errorf(verb, syscall.EINVAL, "input comp_mask %#x: no bit is defined (QUERY-03)", compMask)
	}
	if err := c.check(verb); err != nil {
		return verbs.DeviceAttrEx{}, err
	}
	a := c.dev.attr
	ax := verbs.DeviceAttrEx{
		Orig:             a,
		DeviceCapFlagsEx: uint64(a.DeviceCapFlags),
		PhysPortCntEx:    uint32(a.PhysPortCnt),
		MaxDMSize:        a.MaxDMSize, // 0 under NoDM (DM-02)
	}
	// The clock that ibv_wc_read_completion_ts counts in (CQX-09), when
	// the profile lets CQs timestamp completions at all (CQX-02).
	if !c.dev.fabric.profile.NoCQTimestamps {
		ax.CompletionTimestampMask, ax.HCACoreClock = a.CompletionTimestampMask, a.HCACoreClock
	}
	ax.ODPCaps, ax.XRCODPCaps = odpCaps(c.dev.fabric.profile)
	return ax, nil
}
