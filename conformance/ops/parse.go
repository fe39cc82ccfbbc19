package ops

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/internal/cmdline"
	"github.com/verbsim/verbsim/verbs"
)

// Parse reads operations back from a log in the scenario language, as
// Machine.Log writes it: one operation per command line. Narration ("# "
// lines), blank lines and expected-output blocks ("----" to the next blank
// line) are skipped, and so are the commands of the log's header (fabric,
// open_device, alloc_pd, create_ah), which a Machine performs itself. A
// line that is no operation of a Machine is an error naming its line.
func Parse(src []byte) ([]Op, error) {
	var ops []Op
	err := eachCommand(src, func(a *argReader) error {
		op, err := a.op()
		if err == nil {
			err = a.done()
		}
		if err == nil && op != nil {
			ops = append(ops, op)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return ops, nil
}

// eachCommand calls f with the arguments of each command line of a log in
// the scenario language, skipping narration ("#" lines), blank lines and
// expected-output blocks ("----" to the next blank line). An error, f's or
// the line's, names the line.
func eachCommand(src []byte, f func(a *argReader) error) error {
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case l == "----":
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				i++
			}
			continue
		}
		verb, args, err := cmdline.Split(l)
		if err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
		if err := f(&argReader{verb: verb, args: args}); err != nil {
			return fmt.Errorf("line %d: %s: %v", i+1, verb, err)
		}
	}
	return nil
}

// argReader reads the arguments of one command, remembering which it used
// and the first error.
type argReader struct {
	verb string
	args []cmdline.Arg
	used []bool
	err  error
}

func (a *argReader) find(key string, bare bool) (cmdline.Arg, bool) {
	if a.used == nil {
		a.used = make([]bool, len(a.args))
	}
	for i, x := range a.args {
		if x.Key == key && x.Bare == bare {
			a.used[i] = true
			return x, true
		}
	}
	return cmdline.Arg{}, false
}

func (a *argReader) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf(format, args...)
	}
}

// name returns the bare word naming a new object: the first that is none
// of the command's flags.
func (a *argReader) name(flags ...string) string {
	if a.used == nil {
		a.used = make([]bool, len(a.args))
	}
	for i, x := range a.args {
		if x.Bare && !slices.Contains(flags, x.Key) {
			a.used[i] = true
			return x.Key
		}
	}
	a.fail("expected the new object's name")
	return ""
}

func (a *argReader) flag(f string) bool { _, ok := a.find(f, true); return ok }

// str returns key's value; it must be given unless def is.
func (a *argReader) str(key string, def ...string) string {
	x, ok := a.find(key, false)
	switch {
	case !ok && len(def) > 0:
		return def[0]
	case !ok:
		a.fail("missing %s=", key)
		return ""
	case len(x.Vals) != 1:
		a.fail("%s takes one value", key)
		return ""
	}
	return x.Vals[0]
}

func (a *argReader) num(key string, def ...int64) int64 {
	var d []string
	if len(def) > 0 {
		d = []string{strconv.FormatInt(def[0], 10)}
	}
	v := a.str(key, d...)
	if a.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		a.fail("%s=%s: expected a number", key, v)
	}
	return n
}

func (a *argReader) ids(key string) []uint64 {
	x, ok := a.find(key, false)
	if !ok {
		return nil
	}
	out := make([]uint64, len(x.Vals))
	for i, v := range x.Vals {
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			a.fail("%s=%s: expected numbers", key, v)
		}
		out[i] = n
	}
	return out
}

// fixed requires key to be absent or value.
func (a *argReader) fixed(key, value string) {
	if v := a.str(key, value); v != value && a.err == nil {
		a.fail("%s=%s: a Machine's is %s", key, v, value)
	}
}

// done reports the first error, or an argument the operation does not
// take.
func (a *argReader) done() error {
	if a.err != nil {
		return a.err
	}
	for i, x := range a.args {
		if !a.used[i] {
			return fmt.Errorf("unexpected argument %s", x.Key)
		}
	}
	return nil
}

// header are the commands of a log's header.
var header = []string{"fabric", "open_device", "alloc_pd", "create_ah"}

// op reads the operation of the command; nil for a header command.
func (a *argReader) op() (Op, error) {
	if a.used = make([]bool, len(a.args)); slices.Contains(header, a.verb) {
		for i := range a.used {
			a.used[i] = true
		}
		return nil, nil
	}
	switch a.verb {
	case "create_comp_channel":
		a.fixed("ctx", "ctx")
		return CreateChannel{Name: a.name()}, nil
	case "create_cq":
		a.fixed("ctx", "ctx")
		return CreateCQ{Name: a.name(), CQE: int(a.num("cqe")), Channel: a.str("channel", ""), Vector: int(a.num("vector", 0))}, nil
	case "req_notify_cq":
		o := Arm{CQ: a.str("cq"), Solicited: a.flag("solicited")}
		if a.flag("next") == o.Solicited {
			a.fail("expected next or solicited")
		}
		return o, nil
	case "complete":
		return a.push(), nil
	case "poll_cq":
		return Poll{CQ: a.str("cq"), N: int(a.num("n")), Ex: a.flag("ex")}, nil
	case "get_cq_event":
		return GetEvent{Channel: a.str("channel")}, nil
	case "ack_cq_events":
		return Ack{CQ: a.str("cq"), N: int(a.num("n"))}, nil
	case "resize_cq":
		return Resize{CQ: a.str("cq"), CQE: int(a.num("cqe"))}, nil
	case "destroy_cq":
		return DestroyCQ{CQ: a.str("cq")}, nil
	case "destroy_comp_channel":
		return DestroyChannel{Channel: a.str("channel")}, nil
	case "get_async_event":
		a.fixed("ctx", "ctx")
		return GetAsync{}, nil
	case "ack_async_event":
		a.fixed("ctx", "ctx")
		return AckAsync{Event: int(a.num("event"))}, nil
	case "hold":
		return Hold{CQ: a.str("cq")}, nil
	case "release":
		return Release{CQ: a.str("cq")}, nil
	case "create_qp":
		a.fixed("pd", "pd")
		return CreateQP{Name: a.name("sq_sig_all"), Type: a.qpType(), SendCQ: a.str("send_cq"), RecvCQ: a.str("recv_cq"),
			MaxSendWR: int(a.num("send_wr")), MaxRecvWR: int(a.num("recv_wr")), SigAll: a.flag("sq_sig_all")}, nil
	case "modify_qp":
		return a.modify(), nil
	case "post_send":
		o := PostSend{QP: a.str("qp"), WRIDs: a.ids("wr_id"), Signaled: a.ids("signaled")}
		a.fixed("len", "0")
		if ah := a.str("ah", ""); ah != "" {
			o.UD = true
			a.fixed("ah", "ah")
			a.fixed("dest_qpn", fmt.Sprintf("%#x", DestQPN))
			a.fixed("qkey", fmt.Sprintf("%#x", QKey))
		}
		return o, nil
	case "post_recv":
		a.fixed("len", "0")
		return PostRecv{QP: a.str("qp"), WRIDs: a.ids("wr_id")}, nil
	case "destroy_qp":
		return DestroyQP{QP: a.str("qp")}, nil
	}
	return nil, fmt.Errorf("not an operation of a Machine")
}

func (a *argReader) push() Push {
	o := Push{CQ: a.str("cq"), Solicited: a.flag("solicited")}
	w := &o.WC
	w.WRID = uint64(a.num("wr_id"))
	op := a.str("opcode")
	found := false
	for k, v := range wcOpcodes {
		if v == op {
			w.Opcode, found = k, true
		}
	}
	if !found {
		if n, err := strconv.Atoi(op); err == nil {
			w.Opcode = verbs.WCOpcode(n)
		} else {
			a.fail("opcode=%s: not an opcode", op)
		}
	}
	st := a.str("status")
	found = false
	for s := verbs.WCStatus(0); s.Valid(); s++ {
		if statusWord(s) == st {
			w.Status, found = s, true
		}
	}
	if !found {
		a.fail("status=%s: not a status", st)
	}
	w.ByteLen = uint32(a.num("byte_len"))
	w.QPNum = uint32(a.num("qp_num", 0))
	w.VendorErr = uint32(a.num("vendor_err", 0))
	if _, ok := a.find("imm", false); ok {
		w.WCFlags |= verbs.WCWithImm
		w.ImmData = uint32(a.num("imm"))
	}
	return o
}

func (a *argReader) qpType() verbs.QPType {
	switch t := a.str("type"); t {
	case "rc":
		return verbs.QPTypeRC
	case "uc":
		return verbs.QPTypeUC
	case "ud":
		return verbs.QPTypeUD
	default:
		n, err := strconv.Atoi(t)
		if err != nil {
			a.fail("type=%s: not a QP type", t)
		}
		return verbs.QPType(n)
	}
}

func (a *argReader) modify() ModifyQP {
	o := ModifyQP{QP: a.str("qp")}
	st := a.str("state")
	if i := slices.Index(stateWords, st); i >= 0 {
		o.To = verbs.QPState(i)
	} else if n, err := strconv.Atoi(st); err == nil {
		o.To = verbs.QPState(n)
	} else {
		a.fail("state=%s: not a state", st)
	}
	if x, ok := a.find("mask", false); ok {
		for _, w := range x.Vals {
			found := false
			for b, name := range maskWords {
				if name == w {
					o.Mask |= b
					found = true
				}
			}
			if !found {
				a.fail("mask: %s is no attribute", w)
			}
		}
	}
	a.fixed("dest_qpn", fmt.Sprintf("%#x", DestQPN))
	return o
}

// Replay applies ops to a fresh Machine on the device newDevice makes,
// checking after each as StateMachine does, and returns the first
// difference with the log up to it (Machine.Failure), or nil.
func Replay(newDevice conformance.NewDevice, ops []Op) error {
	m, err := NewMachine(newDevice)
	if err != nil {
		return err
	}
	defer m.Close()
	for _, op := range ops {
		err := m.Apply(op)
		if err == nil {
			err = m.Check()
		}
		if err != nil {
			return m.Failure(err)
		}
	}
	return nil
}
