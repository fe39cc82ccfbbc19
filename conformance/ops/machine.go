package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Machine applies operations to a device and to the reference model
// (conformance/model) at once and reports the first difference. Make one
// with NewMachine. A Machine is not safe for concurrent use: operations are
// compared one at a time.
//
// Every operation it applies goes into its Log, a scenario that `verbsim run`
// replays on verbsim and Parse reads back.
type Machine struct {
	// CheckError, if set, sees every error the implementation returns and may
	// reject it (the fuzz targets require a *verr.Error carrying an errno).
	CheckError func(op Op, err error) error

	ctx  verbs.Context
	pd   verbs.PD
	ah   verbs.AH
	lim  conformance.Limits
	prof verbs.Readings
	m    *model.Model
	h    model.History

	chans objects[verbs.CompChannel]
	cqs   objects[verbs.CQ]
	qps   objects[verbs.QP]
	async []asyncRead // every async event read, in order
	tags  int         // cq_context values handed out
	wrid  uint64      // the last wr_id NextWRIDs handed out

	// created counts the create operations applied, per name prefix (ch,
	// cq, qp): NextName's numbering.
	created map[string]int
	// lastEventCQ is the CQ the last successful GetEvent named, or "".
	lastEventCQ string

	log      []Op
	outcomes []string // per operation of log: the errno its verb returned, or ""
}

// objects are a Machine's objects of one kind, named, in the order they
// were created; the index is the model's.
type objects[T comparable] struct {
	names []string
	items []T
}

func (o *objects[T]) add(name string, x T) {
	o.names = append(o.names, name)
	o.items = append(o.items, x)
}

// find returns the index of the object named name, or -1.
func (o *objects[T]) find(name string) int {
	for i, n := range o.names {
		if n == name {
			return i
		}
	}
	return -1
}

// of returns the index of x, or -1.
func (o *objects[T]) of(x T) int {
	for i, y := range o.items {
		if y == x {
			return i
		}
	}
	return -1
}

// asyncRead is an async event read from the device, and the model's event
// it stands for.
type asyncRead struct {
	ev   verbs.AsyncEvent
	want model.AsyncEvent
}

// cqTag is the cq_context the machine gives each CQ: comparable and unique.
type cqTag struct{ n int }

// smallMaxCQE is the max_cqe the machine asks of a device that can change its
// limits, so that both ends of the cqe range are cheap to reach.
const smallMaxCQE = 16

// ahAttr is the path of the machine's AH: global, so that it also suits an
// Ethernet (RoCE) port, from GID index 0, which is always populated.
var ahAttr = verbs.AHAttr{PortNum: 1, DLID: 1, IsGlobal: true, GRH: verbs.GlobalRoute{DGID: [16]byte{0: 0xfe, 1: 0x80, 15: 1}, HopLimit: 64}}

// NewMachine opens a fresh device from newDevice, reads its profile and
// limits, allocates a PD and an AH for the QPs, and returns a Machine
// driving it. A device that can change its limits
// (conformance.LimitedDevice) is asked for max_cqe 16 and two completion
// vectors.
func NewMachine(newDevice conformance.NewDevice) (*Machine, error) {
	dev, err := newDevice()
	if err != nil {
		return nil, fmt.Errorf("making a device: %w", err)
	}
	if ld, ok := dev.(conformance.LimitedDevice); ok {
		if small, err := ld.WithLimits(conformance.Limits{MaxCQE: smallMaxCQE, NumCompVectors: 2}); err == nil {
			dev = small
		}
	}
	ctx, err := dev.Open()
	if err != nil {
		return nil, fmt.Errorf("opening the device: %w", err)
	}
	m := &Machine{ctx: ctx, prof: dev.Profile(), created: map[string]int{}}
	if m.lim, err = conformance.LimitsOf(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("reading the limits: %w", err), ctx.Close())
	}
	if m.pd, err = ctx.AllocPD(); err != nil || m.pd == nil {
		return nil, errors.Join(fmt.Errorf("ibv_alloc_pd: %v", err), ctx.Close())
	}
	if m.ah, err = m.pd.CreateAH(ahAttr); err != nil || m.ah == nil {
		return nil, errors.Join(fmt.Errorf("ibv_create_ah: %v", err), ctx.Close())
	}
	m.m = model.New(m.prof, model.Limits{MaxCQE: m.lim.MaxCQE, NumCompVectors: m.lim.NumCompVectors, MaxQPWR: m.lim.MaxQPWR})
	return m, nil
}

// Model returns the reference model the machine compares against.
func (m *Machine) Model() *model.Model { return m.m }

// Limits returns the limits of the device under test.
func (m *Machine) Limits() conformance.Limits { return m.lim }

// Close closes the device context, ignoring the outcome: objects may be
// left in any state.
func (m *Machine) Close() { _ = m.ctx.Close() }

// Channels returns the names of the channels created so far.
func (m *Machine) Channels() []string { return m.chans.names }

// CQs returns the names of the CQs created successfully so far, destroyed
// ones included, in the model's order.
func (m *Machine) CQs() []string { return m.cqs.names }

// QPs returns the names of the QPs created successfully so far, destroyed
// ones included, in the model's order.
func (m *Machine) QPs() []string { return m.qps.names }

// QPType returns the type QP name was created with, or 0 if there is no
// such QP.
func (m *Machine) QPType(name string) verbs.QPType {
	if i := m.qps.find(name); i >= 0 {
		return m.m.QP(i).Init.Type
	}
	return 0
}

// AsyncRead returns how many async events have been read so far: AckAsync
// picks one of them.
func (m *Machine) AsyncRead() int { return len(m.async) }

// LastEventCQ returns the CQ the last successful GetEvent named, if the
// last GetEvent succeeded.
func (m *Machine) LastEventCQ() (string, bool) { return m.lastEventCQ, m.lastEventCQ != "" }

// NextName returns the name the next create operation of a kind ("ch",
// "cq" or "qp") takes: the kind and the number of such operations applied
// so far, successful or not.
func (m *Machine) NextName(kind string) string { return fmt.Sprintf("%s%d", kind, m.created[kind]) }

// NextWRIDs returns n fresh wr_ids, 1, 2, 3... across the run.
func (m *Machine) NextWRIDs(n int) []uint64 {
	ids := make([]uint64, max(n, 0))
	for j := range ids {
		m.wrid++
		ids[j] = m.wrid
	}
	return ids
}

// Allows reports whether op can be applied now: the objects it names
// exist, the capability it uses is there, and it keeps to the limits of
// the machine (machine_qp.go).
func (m *Machine) Allows(op Op) bool { return op.check(m) == nil }

// Apply performs op on the device and on the model and returns a
// description of the first difference, or nil. An operation the machine
// cannot apply now (Allows) is an error too, and is not logged.
func (m *Machine) Apply(op Op) error {
	if err := op.check(m); err != nil {
		return fmt.Errorf("%v: cannot be applied: %w", op, err)
	}
	m.log = append(m.log, op)
	m.outcomes = append(m.outcomes, "")
	return op.apply(m)
}

// Outcomes returns, for each operation applied so far, the errno its verb
// returned on the device ("EINVAL"), or "" for success. A poll through the
// iterator that ends with ENOENT succeeded. Replayed on verbsim, the log's
// steps give the same outcomes: the tests compare them.
func (m *Machine) Outcomes() []string { return append([]string(nil), m.outcomes...) }

// record notes err as the outcome of the operation being applied, unless
// an earlier call of the operation failed already; ENOENT, the end of an
// iterator's walk, is no failure.
func (m *Machine) record(err error) {
	var n syscall.Errno
	if err == nil || !errors.As(err, &n) || n == syscall.ENOENT || len(m.outcomes) == 0 || m.outcomes[len(m.outcomes)-1] != "" {
		return
	}
	m.outcomes[len(m.outcomes)-1] = verr.Name(n)
}

// Ops returns the operations applied so far.
func (m *Machine) Ops() []Op { return append([]Op(nil), m.log...) }

// Log returns the operations applied so far as a scenario: a fabric of one
// device with the limits and the readings of the device under test, its
// context ctx, the PD pd and the AH ah the machine made, then one line per
// operation. `verbsim run FILE` replays it on verbsim; Parse reads it back.
func (m *Machine) Log() string {
	var b strings.Builder
	b.WriteString("# The operations of a conformance/ops Machine, as a scenario: verbsim run FILE\n")
	b.WriteString("# replays them on verbsim, and ops.Parse reads them back.\n")
	l := cmd("fabric").kv("devices", "(a)").num("max_cqe", m.lim.MaxCQE).
		num("comp_vectors", m.lim.NumCompVectors).num("max_qp_wr", m.lim.MaxQPWR)
	if r := m.prof.String(); m.prof != (verbs.Readings{}) {
		l.kv("readings", "("+strings.ReplaceAll(r, " ", ",")+")")
	}
	fmt.Fprintf(&b, "%v\n\nopen_device ctx dev=a\n\nalloc_pd pd ctx=ctx\n\ncreate_ah ah pd=pd\n", l)
	for _, op := range m.log {
		b.WriteString("\n" + op.String() + "\n")
	}
	return b.String()
}

// FailureMark ends the line that introduces the log in a Failure.
const FailureMark = "the last operation is the one that differed from the model:"

// Failure returns err with the log appended, as a failing state machine
// reports it: after err, a line ending in FailureMark, a blank line and
// the log, whose last operation is the one that differed.
func (m *Machine) Failure(err error) error {
	return fmt.Errorf("%w\n\nThe run as a scenario (save it and replay it with verbsim run FILE); %s\n\n%s", err, FailureMark, m.Log())
}

// opRules names the rules that fix each operation's outcome, for messages.
func opRules(op Op) string {
	switch op.(type) {
	case CreateChannel:
		return "CHAN-01"
	case CreateCQ:
		return "CQ-01, CQ-03"
	case Arm:
		return "NOTIFY-10"
	case Push:
		return "CQ-22, CQ-23"
	case Poll:
		return "CQ-15, CQ-23"
	case GetEvent:
		return "CHAN-04, CHAN-06"
	case Ack:
		return "CHAN-07, CHAN-08"
	case Resize:
		return "CQ-08"
	case DestroyCQ:
		return "CQ-11, CQ-13"
	case DestroyChannel:
		return "CHAN-09"
	case GetAsync:
		return "ASYNC-02, ASYNC-07, ASYNC-13"
	case AckAsync:
		return "ASYNC-05, CHAN-08"
	case Hold, Release:
		return "CQ-11"
	case CreateQP:
		return "QP-01, QP-02, QP-03"
	case ModifyQP:
		return "QP-07, QP-10, QP-13, FLUSH-01, FLUSH-08"
	case PostSend:
		return "QP-26, QP-27, QP-29, FLUSH-05"
	case PostRecv:
		return "QP-25, QP-27, QP-31, FLUSH-05"
	case DestroyQP:
		return "QP-37"
	}
	return ""
}

// outcome names an errno the model predicts, "success" for none.
func outcome(n syscall.Errno) string {
	if n == 0 {
		return "success"
	}
	return verr.Name(n)
}

// same compares err with the model's errno.
func (m *Machine) same(op Op, what string, err error, want syscall.Errno) error {
	m.record(err)
	if r := opRules(op); r != "" {
		what += " (" + r + ")"
	}
	if err != nil && m.CheckError != nil {
		if e := m.CheckError(op, err); e != nil {
			return fmt.Errorf("%v: %s: %w", op, what, e)
		}
	}
	switch {
	case want == 0 && err == nil:
		return nil
	case want == 0:
		return fmt.Errorf("%v: %s returned %v; the model expects success", op, what, err)
	case err == nil:
		return fmt.Errorf("%v: %s succeeded; the model expects %s", op, what, outcome(want))
	case !errors.Is(err, want):
		return fmt.Errorf("%v: %s returned %v; the model expects %s", op, what, err, outcome(want))
	}
	return nil
}

// fresh reports whether name may name a new object of kind: the next name
// NextName gives.
func (m *Machine) fresh(kind, name string) error {
	if want := m.NextName(kind); name != want {
		return fmt.Errorf("the new object is %s, not %s", want, name)
	}
	return nil
}

// channel, cq and qp look an object up by name.
func (m *Machine) channel(name string) (int, error) { return lookup(&m.chans, "channel", name) }

func (m *Machine) cq(name string) (int, error) { return lookup(&m.cqs, "cq", name) }

func (m *Machine) qp(name string) (int, error) { return lookup(&m.qps, "qp", name) }

func lookup[T comparable](o *objects[T], kind, name string) (int, error) {
	if i := o.find(name); i >= 0 {
		return i, nil
	}
	return -1, fmt.Errorf("no %s %s", kind, name)
}

// Check compares the state the device lets one observe without changing it
// (the capacity of every live CQ, the depth of every channel that reports
// it, the state and depths of every live QP and, where the QP reports them,
// its outstanding requests) with the model, and checks the invariants of
// model.History on everything the device returned so far.
func (m *Machine) Check() error {
	var errs []error
	for i, q := range m.cqs.items {
		if m.m.State(i) != model.Live {
			continue
		}
		if got, want := q.CQE(), m.m.CQE(i); got != want {
			errs = append(errs, fmt.Errorf("%s reports cqe %d; it reported %d after its last create or resize (CQ-02, CQ-09)", m.cqs.names[i], got, want))
		}
	}
	for i, ch := range m.chans.items {
		want, live := m.m.Unread(i)
		if d, ok := ch.(conformance.Depth); ok && live {
			if got := d.Len(); got != want {
				errs = append(errs, fmt.Errorf("%s holds %d unread events; the model expects %d (CHAN-05)", m.chans.names[i], got, want))
			}
		}
	}
	errs = append(errs, m.checkQPs()...)
	if err := m.h.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// patient returns a context bounded by conformance.Patience, for verbs that
// must return on their own.
func patient() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), conformance.Patience)
}
