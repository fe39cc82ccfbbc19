package sim

import (
	"context"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Device is one simulated adapter (struct ibv_device).
// On a nil *Device every method returns EINVAL or zero values; see the
// package doc.
type Device struct {
	fabric *Fabric
	name   string
	attr   verbs.DeviceAttr
	ports  []*port // port n is ports[n-1]
	cqs    int     // live CQs on the device, across contexts (CQ-06)
	pds    int     // live PDs, across contexts (max_pd)
	ahs    int     // live AHs (max_ah)
	mrs    mrTable // live MRs, their keys and the simulated address space
	qps    int     // live QPs (max_qp)
	srqs   int     // live SRQs (max_srq)
	srqn   uint32  // the last XRC SRQ number given out (XRC-05)
	qpn    uint32  // the last QP number given out (QP-01)
	// qpByNum finds the QP a packet is addressed to.
	qpByNum qpTable
	// srqByNum finds the XRC SRQ an XRC request names (XRC-10); nil until
	// the first XRC SRQ.
	srqByNum map[uint32]*qp.SRQ
	// contexts are the open contexts, which receive port events.
	contexts []*Context
	// dm is the device memory that AllocDM shares out (DM-03).
	dm dmPool
	// seq counts the objects of each kind created on the device, to name
	// them in traces; nil until the first is named.
	seq map[string]int
}

func newDevice(f *Fabric, dc DeviceConfig) *Device {
	d := &Device{fabric: f, name: dc.Name, attr: dc.Attr}
	// A profile without XRC (XRC-03) has no IBV_DEVICE_XRC, whatever the
	// configured flags hold.
	if f.profile.NoXRC {
		d.attr.DeviceCapFlags &^= verbs.DeviceXRC
	}
	d.dm.init(d)
	for i, pc := range dc.Ports {
		p := newPort(uint8(i+1), dc.Attr.NodeGUID, pc)
		p.dev = d
		d.ports = append(d.ports, p)
	}
	d.mrs.init()
	return d
}

// Name returns the device name (ibv_get_device_name).
func (d *Device) Name() string {
	if d == nil {
		return ""
	}
	return d.name
}

// GUID returns the node GUID (ibv_get_device_guid).
func (d *Device) GUID() uint64 {
	if d == nil {
		return 0
	}
	return d.attr.NodeGUID
}

// Attr returns the device attributes (ibv_query_device).
func (d *Device) Attr() verbs.DeviceAttr {
	if d == nil {
		return verbs.DeviceAttr{}
	}
	return d.attr
}

// Fabric returns the fabric the device is on.
func (d *Device) Fabric() *Fabric {
	if d == nil {
		return nil
	}
	return d.fabric
}

// PortConfigs returns the configuration of the device's ports as
// ibv_query_port shows them (link layer, MTUs, state, speeds), port 1
// first, for making a device like this one on another fabric: LIDs are
// left zero for that fabric to assign, and the GID and P_Key tables to
// their defaults. EINVAL on a nil device; it opens a context of its own for
// the queries and closes it.
func (d *Device) PortConfigs() ([]PortConfig, error) {
	if d == nil {
		return nil, verr.New("ibv_query_port", syscall.EINVAL, "nil device")
	}
	c, err := d.Open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ports := make([]PortConfig, d.Attr().PhysPortCnt)
	for i := range ports {
		pa, err := c.QueryPort(uint8(i + 1))
		if err != nil {
			return nil, err
		}
		pa.LID, pa.SMLID = 0, 0
		ports[i].Attr = pa
	}
	return ports, nil
}

// Open opens a context on the device (ibv_open_device).
func (d *Device) Open() (*Context, error) {
	if d == nil {
		return nil, verr.New("ibv_open_device", syscall.EINVAL, "nil device")
	}
	c := &Context{dev: d, async: notify.NewAsyncQueue(d.fabric.d)}
	e := d.fabric.eng
	d.fabric.d.Enter(domain.Op{})
	d.contexts = append(d.contexts, c)
	name := e.nameLocked(d, "ctx", c)
	c.async.SetTraceName(name)
	e.callLocked(name, "open_device", "", "", nil)
	d.fabric.d.Leave(domain.Op{}, nil)
	return c, nil
}

// Context is an open device context (struct ibv_context): the owner of
// channels, CQs and PDs, and of the async event queue.
// On a nil *Context every method returns EINVAL or zero values; see the
// package doc.
type Context struct {
	tname  string // the trace name, given at creation
	dev    *Device
	async  *notify.AsyncQueue
	closed bool
	cqs    int    // live CQs created through this context
	pds    int    // live PDs allocated through this context
	pdSeq  uint32 // handles of the context's PDs
	xrcds  int    // open XRC domains (XRC-02)
	dms    int    // live device memory allocations (DM-05)
}

// Device returns the device the context was opened on.
func (c *Context) Device() *Device {
	if c == nil {
		return nil
	}
	return c.dev
}

// String names the context as the trace does ("ibv_context vsim0/ctx#1"), so
// that a device context printed where a cq_context, qp_context or
// srq_context was meant says what it is (CQ.Context).
func (c *Context) String() string {
	if c == nil {
		return ""
	}
	return "ibv_context " + c.traceName()
}

// NumCompVectors returns ibv_context.num_comp_vectors.
func (c *Context) NumCompVectors() int {
	if c == nil {
		return 0
	}
	return c.dev.attr.NumCompVectors
}

// QueryDevice returns the device attributes (ibv_query_device).
func (c *Context) QueryDevice() (verbs.DeviceAttr, error) {
	if c == nil {
		return verbs.DeviceAttr{}, verr.New("ibv_query_device", syscall.EINVAL, "nil device context")
	}
	if err := c.check("ibv_query_device"); err != nil {
		return verbs.DeviceAttr{}, err
	}
	return c.dev.attr, nil
}

func (c *Context) check(verb string) error {
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	return c.checkLocked(verb)
}

func (c *Context) checkLocked(verb string) error {
	if c.closed {
		return verr.New(verb, syscall.EINVAL, "the device context is closed")
	}
	return nil
}

// CreateCompChannel creates a completion channel (ibv_create_comp_channel).
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	if c == nil {
		return nil, verr.New("ibv_create_comp_channel", syscall.EINVAL, "nil device context")
	}
	f := c.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked("ibv_create_comp_channel"); err != nil {
		f.eng.callLocked(f.eng.nameOf(c), "create_comp_channel", "", "", err)
		return nil, err
	}
	ch := cq.NewChannel(f.d)
	ch.SetOwner(c)
	name := f.eng.nameLocked(c.dev, "chan", ch)
	ch.SetTraceName(name)
	f.eng.callLocked(name, "create_comp_channel", "", "", nil)
	return newChannel(ch), nil
}

// CQInitAttr holds the arguments of ibv_create_cq_ex, struct
// ibv_cq_init_attr_ex. parent_domain is not modelled: InitAttrMaskPD in
// CompMask is EOPNOTSUPP (CQX-01).
type CQInitAttr struct {
	CQE        int          // requested capacity (CQ-01, CQ-02)
	Context    any          // cq_context (CQ-04)
	Channel    *CompChannel // optional (CQ-05)
	CompVector int          // (CQ-03)
	// WCFlags is wc_flags: the fields the poll iterator may read beyond
	// wr_id, status, opcode, vendor_err and wc_flags (CQX-03). Unsupported
	// bits are EOPNOTSUPP (CQX-02). CreateCQ uses verbs.WCStandardFlags.
	WCFlags verbs.WCExFlags
	// CompMask is comp_mask: verbs.CQInitAttrMaskFlags says Flags is given;
	// any other bit is EOPNOTSUPP (CQX-01).
	CompMask verbs.CQInitAttrMask
	// Flags is flags, read only with verbs.CQInitAttrMaskFlags in CompMask:
	// verbs.CQCreateIgnoreOverrun (CQ-23), verbs.CQCreateSingleThreaded (accepted, no
	// effect); other bits are EOPNOTSUPP (CQX-01).
	Flags verbs.CQCreateFlags
	// IgnoreOverrun is IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (CQ-23), whether
	// or not Flags says so too.
	IgnoreOverrun bool
}

// CreateCQ creates a completion queue of at least cqe entries
// (ibv_create_cq). cqContext is handed back with every event of the CQ; ch,
// which may be nil, is the channel the CQ's events go to.
//
// The CQ is an extended CQ whose wc_flags are verbs.WCStandardFlags, the
// fields of struct ibv_wc: its completions may also be read with StartPoll
// and the Read methods (CQX-03), as mlx5 allows.
func (c *Context) CreateCQ(cqe int, cqContext any, ch *CompChannel, compVector int) (*CQ, error) {
	return c.CreateCQEx(CQInitAttr{CQE: cqe, Context: cqContext, Channel: ch, CompVector: compVector, WCFlags: verbs.WCStandardFlags})
}

// CreateCQEx creates a completion queue from attr (ibv_create_cq_ex): the
// same *CQ as CreateCQ's, which both Poll and the poll iterator (StartPoll,
// NextPoll, EndPoll) read. Unsupported comp_mask, wc_flags or flags bits are
// EOPNOTSUPP and are checked first (CQX-01, CQX-02); the completion
// timestamps count the fabric's virtual time at the device's HCACoreClock,
// unless the profile has NoCQTimestamps (CQX-09). Besides the checks of
// package cq it enforces the device's max_cq with ENOMEM
// (CQ-06), and refuses with EINVAL a channel made through another device
// context, of this device or another, as the kernel does when it looks the
// channel up among the caller's descriptors.
func (c *Context) CreateCQEx(attr CQInitAttr) (_ *CQ, err error) {
	if c == nil {
		return nil, verr.New("ibv_create_cq", syscall.EINVAL, "nil device context")
	}
	f := c.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	defer func() {
		if err != nil {
			f.eng.callLocked(f.eng.nameOf(c), "create_cq", "", fmt.Sprintf("cqe=%d", attr.CQE), err)
		}
	}()
	if err := c.checkLocked("ibv_create_cq"); err != nil {
		return nil, err
	}
	if attr.Channel != nil {
		if err := checkOwner("ibv_create_cq", "channel", c, attr.Channel, sameContext); err != nil {
			return nil, err
		}
	}
	p := f.profile
	cfg := cq.Config{
		CQE:           attr.CQE,
		Context:       attr.Context,
		Channel:       attr.Channel.eng(),
		CompVector:    attr.CompVector,
		IgnoreOverrun: attr.IgnoreOverrun,
		WCFlags:       attr.WCFlags,
		CompMask:      attr.CompMask,
		Flags:         attr.Flags,
		Limits:        cq.Limits{MaxCQE: c.dev.attr.MaxCQE, NumCompVectors: c.dev.attr.NumCompVectors},
		Overrun:       f.pol.Overrun,
		Destroy:       f.pol.Destroy,
		Rounding:      f.pol.Rounding,
		Solicited:     f.pol.Solicited,
		Async:         c.async,
		Domain:        f.d,
		Name:          f.eng.peekName(c.dev, "cq"),
		Owner:         c,
		OnDestroy: func() {
			c.dev.cqs--
			c.cqs--
		},
	}
	if !p.NoCQTimestamps {
		cfg.Clock, cfg.ClockKHz = f.eng.clock, c.dev.attr.HCACoreClock
	}
	// Bad arguments are EINVAL even on a device that is out of CQs.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c.dev.cqs >= c.dev.attr.MaxCQ {
		return nil, verr.Errorf("ibv_create_cq", syscall.ENOMEM, "the device already has max_cq=%d CQs (CQ-06)", c.dev.attr.MaxCQ)
	}
	q, err := cq.NewLocked(cfg)
	if err != nil {
		return nil, err
	}
	c.dev.cqs++
	c.cqs++
	name := f.eng.nameLocked(c.dev, "cq", q)
	if f.eng.tracing() {
		f.eng.callLocked(name, "create_cq", "", fmt.Sprintf("cqe=%d", attr.CQE), nil)
	}
	return newCQ(q), nil
}

// GetAsyncEvent waits for the next async event of the context
// (ibv_get_async_event, ASYNC-01). Events are handed out in the order
// raised, each to exactly one reader (ASYNC-06). When ctx is done first it
// returns an error matching syscall.EINTR and ctx's error, and takes no
// event; on a closed context it returns EBADF.
func (c *Context) GetAsyncEvent(ctx context.Context) (AsyncEvent, error) {
	if c == nil {
		return AsyncEvent{}, verr.New("ibv_get_async_event", syscall.EINVAL, "nil device context")
	}
	ev, err := c.async.GetAsyncEvent(ctx)
	return asyncEvent(ev), err
}

// TryGetAsyncEvent returns the next async event or EAGAIN (a non-blocking
// async_fd).
func (c *Context) TryGetAsyncEvent() (AsyncEvent, error) {
	if c == nil {
		return AsyncEvent{}, verr.New("ibv_get_async_event", syscall.EINVAL, "nil device context")
	}
	ev, err := c.async.TryGetAsyncEvent()
	return asyncEvent(ev), err
}

// PendingAsyncEvents returns the queued, unread async events of the context,
// oldest first, without taking them: a read-only view for teaching and
// debugging tools. The copies cannot be acknowledged. It is nil when nothing
// is queued.
func (c *Context) PendingAsyncEvents() []AsyncEvent {
	if c == nil {
		return nil
	}
	p := c.async.Pending()
	if len(p) == 0 {
		return nil
	}
	out := make([]AsyncEvent, len(p))
	for i := range p {
		out[i] = asyncEvent(p[i])
	}
	return out
}

// AsyncEventCounts returns how many async events of the context have been
// read (GetAsyncEvent, TryGetAsyncEvent) and acknowledged in total: a
// simulator view for tools, with no verbs counterpart.
func (c *Context) AsyncEventCounts() (read, acked uint64) {
	if c == nil {
		return 0, 0
	}
	return c.async.Counts()
}

// AsyncEventsRaised returns how many async events of type typ the context
// has raised, read or not: a simulator view for tools, with no verbs
// counterpart.
func (c *Context) AsyncEventsRaised(typ verbs.EventType) uint64 {
	if c == nil {
		return 0
	}
	return c.async.Raised(typ)
}

// Close closes the context (ibv_close_device). verbsim refuses with EBUSY
// while CQs, PDs, XRC domains or device memory created through the context still exist, where
// libibverbs would leak or tear them down: a test that forgets a destroy
// hears about it.
// Closing twice is EINVAL. Readers blocked on the async queue return EBADF.
func (c *Context) Close() (err error) {
	if c == nil {
		return verr.New("ibv_close_device", syscall.EINVAL, "nil device context")
	}
	f := c.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if f.eng.tracing() {
		defer func() { f.eng.callLocked(f.eng.nameOf(c), "close_device", "", "", err) }()
	}
	if err := c.checkLocked("ibv_close_device"); err != nil {
		return err
	}
	if c.cqs > 0 {
		return verr.Errorf("ibv_close_device", syscall.EBUSY, "%d CQ(s) created through the context still exist", c.cqs)
	}
	if c.pds > 0 {
		return verr.Errorf("ibv_close_device", syscall.EBUSY, "%d PD(s) allocated through the context still exist", c.pds)
	}
	if c.xrcds > 0 {
		return verr.Errorf("ibv_close_device", syscall.EBUSY, "%d XRC domain(s) opened through the context are still open (XRC-02)", c.xrcds)
	}
	if c.dms > 0 {
		return verr.Errorf("ibv_close_device", syscall.EBUSY, "%d device memory allocation(s) made through the context still exist (DM-05)", c.dms)
	}
	c.closed = true
	for i, o := range c.dev.contexts {
		if o == c {
			c.dev.contexts = append(c.dev.contexts[:i], c.dev.contexts[i+1:]...)
			break
		}
	}
	return c.async.CloseLocked()
}

// qpLocked returns the live QP numbered num on d, or nil.
func (d *Device) qpLocked(num uint32) *qp.QP { return d.qpByNum.get(num) }

// qpTable finds a device's live QPs by number, indexed directly: a
// directory of pages of qpPageLen numbers each, a page made when the
// first QP numbered in it is created and dropped when its last one is
// destroyed. QP numbers are given out in sequence (QP-01), so the live
// ones fill few pages, and a lookup is two loads instead of a map's hash
// and probe (the many-pairs figure of docs/performance.md). The directory
// grows to the highest number given out, at most 2^24/qpPageLen entries.
type qpTable struct {
	pages []*qpPage
}

const qpPageLen = 256

type qpPage struct {
	q    [qpPageLen]*qp.QP
	live int
}

// get returns the QP numbered num, or nil.
func (t *qpTable) get(num uint32) *qp.QP {
	i := num / qpPageLen
	if i >= uint32(len(t.pages)) {
		return nil
	}
	p := t.pages[i]
	if p == nil {
		return nil
	}
	return p.q[num%qpPageLen]
}

// set records q as the QP numbered num (a number not in use).
func (t *qpTable) set(num uint32, q *qp.QP) {
	i := int(num / qpPageLen)
	if i >= len(t.pages) {
		t.pages = append(t.pages, make([]*qpPage, i+1-len(t.pages))...)
	}
	p := t.pages[i]
	if p == nil {
		p = new(qpPage)
		t.pages[i] = p
	}
	if p.q[num%qpPageLen] == nil {
		p.live++
	}
	p.q[num%qpPageLen] = q
}

// del forgets the QP numbered num.
func (t *qpTable) del(num uint32) {
	i := num / qpPageLen
	if i >= uint32(len(t.pages)) || t.pages[i] == nil {
		return
	}
	p := t.pages[i]
	if p.q[num%qpPageLen] != nil {
		p.q[num%qpPageLen] = nil
		p.live--
	}
	if p.live == 0 {
		t.pages[i] = nil
	}
}
