package scenario

import (
	"regexp"
	"slices"
	"strings"

	"github.com/verbsim/verbsim/sim/trace"
)

// The connection manager in a picture: one lane per device's CM, on which
// the CM messages travel as arrows from CM to CM; the events it raises are
// arrows into the lane of their event channel; the rdma_* calls on an ID
// go to the CM lane of the ID's device.

var (
	cmObj   = regexp.MustCompile(`^(\S+)/cm (port \d+|conn 0x[0-9a-f]+)$`)
	cmTo    = regexp.MustCompile(`^(\S+)/qp 0x1$`)
	idArg   = regexp.MustCompile(`\bid=(\S+)`)
	nameArg = regexp.MustCompile(`^\S+ ([A-Za-z0-9_.-]+)(\s|$)`)
)

// cmLaneKey returns the lane of the CM a trace object belongs to ("a/cm
// port 1" and "a/cm conn 0x1" are the CM of a).
func cmLaneKey(obj string) (string, bool) {
	m := cmObj.FindStringSubmatch(obj)
	if m == nil {
		return "", false
	}
	return "cm " + m[1], true
}

// cmLanes adds, at the first step that shows the connection manager, a
// CM lane for every device whose CM the run shows, in device order.
func cmLanes(r *Result, i int, add func(key, label, sub, kind string, step int)) {
	devs := func(st StepResult) []string {
		var out []string
		for _, id := range st.State.IDs {
			if id.Device != "" {
				out = append(out, id.Device)
			}
		}
		for _, e := range st.Engine {
			if k, ok := cmLaneKey(e.Object); ok {
				out = append(out, strings.TrimPrefix(k, "cm "))
			}
		}
		return out
	}
	if len(devs(r.Steps[i])) == 0 {
		return
	}
	var all []string
	for _, st := range r.Steps {
		all = append(all, devs(st)...)
	}
	slices.Sort(all)
	for _, d := range slices.Compact(all) {
		add("cm "+d, "CM of "+d, "conn. manager", "cm", i)
	}
}

// idDevice returns the device an ID is bound to in any step of r, or "".
func idDevice(r *Result, name string) string {
	for _, st := range r.Steps {
		for _, id := range st.State.IDs {
			if id.Name == name && id.Device != "" {
				return id.Device
			}
		}
	}
	return ""
}

// cmCallTarget returns the lane an rdma_* call's arrow goes to: the object
// it creates, the CM of the ID it names, or the channel it names.
func cmCallTarget(r *Result, cmd string, idx map[string]int) (int, bool) {
	if !strings.HasPrefix(cmd, "rdma_") {
		return 0, false
	}
	if m := nameArg.FindStringSubmatch(cmd); m != nil && !strings.Contains(m[1], "=") {
		for _, k := range []string{"qp ", "channel "} {
			if j, ok := idx[k+m[1]]; ok {
				return j, true
			}
		}
	}
	if m := idArg.FindStringSubmatch(cmd); m != nil {
		if j, ok := idx["cm "+idDevice(r, m[1])]; ok {
			return j, true
		}
	}
	if m := refArg.FindStringSubmatch(cmd); m != nil && m[1] == "channel" {
		if j, ok := idx["channel "+m[2]]; ok {
			return j, true
		}
	}
	return 0, true
}

// cmDestroyedLane returns the lane an rdma_* destroy ends: the channel of
// rdma_destroy_event_channel, the QP of rdma_destroy_qp.
func cmDestroyedLane(r *Result, cmd string) string {
	f := strings.Fields(cmd)
	switch f[0] {
	case "rdma_destroy_event_channel":
		if m := refArg.FindStringSubmatch(cmd); m != nil {
			return "channel " + m[2]
		}
	case "rdma_destroy_qp":
		m := idArg.FindStringSubmatch(cmd)
		if m == nil {
			return ""
		}
		for _, st := range r.Steps {
			g := strings.Fields(st.Command)
			if g[0] == "rdma_create_qp" && len(g) > 1 && slices.Contains(g[2:], "id="+m[1]) {
				return "qp " + g[1]
			}
		}
	}
	return ""
}

// cmItems draws a trace record of the connection manager: CM messages
// between CM lanes, events into their channel. It reports false for a
// record that is not the CM's. last is the CM lane that acted last in the
// step, where an event whose ID has no lane yet comes from.
func cmItems(r *Result, e *trace.Record, idx map[string]int, sentTo map[int]bool, last *int) ([]item, bool) {
	full := "at " + fmtTime(e.Tick) + "  " + e.Line()
	if k, ok := cmLaneKey(e.Object); ok {
		lane := idx[k]
		*last = lane
		switch {
		case e.Kind == trace.KindPacket && e.Name == "send" && e.Packet != nil && e.Packet.CM != trace.CMNone:
			lbl := "CM " + e.Packet.CM.String()
			if m := cmTo.FindStringSubmatch(e.Peer); m != nil {
				if to, ok := idx["cm "+m[1]]; ok && to != lane {
					sentTo[to] = true
					return []item{{from: lane, to: to, label: lbl, full: full, class: "pkt"}}, true
				}
			}
			return []item{{from: lane, to: lane, label: "sends " + lbl, full: full, class: "note"}}, true
		case e.Kind == trace.KindPacket && e.Name == "receive" && sentTo[lane]:
			return nil, true
		case e.Kind == trace.KindPacket && e.Name == "drop":
			return []item{{from: lane, to: lane, label: "✕ " + e.What(), full: full, class: "drop"}}, true
		}
		return []item{{from: lane, to: lane, label: e.What(), full: full, class: "note"}}, true
	}
	to, ok := idx[e.Object]
	if e.Kind != trace.KindEvent || e.Name != "raise" || e.CM == nil || !ok {
		return nil, false
	}
	name, named := strings.CutPrefix(e.Peer, "id ")
	from := to
	if j, ok := idx["cm "+idDevice(r, name)]; ok && named {
		from = j
	} else if *last > 0 {
		from = *last
	}
	lbl := strings.TrimPrefix(e.CM.Type.String(), "RDMA_CM_EVENT_")
	if named && !strings.Contains(name, "/") {
		lbl += " (" + name + ")"
	}
	return []item{{from: from, to: to, label: lbl, full: full, class: "event"}}, true
}
