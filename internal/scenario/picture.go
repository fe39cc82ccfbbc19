package scenario

import (
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// A picture of a timeline is a sequence diagram: one lane for the
// application, one per QP, SRQ, CQ and completion channel, and one for
// each context's async event queue; down the page, one band per step,
// numbered as the text timeline numbers them. The verb a step calls is an
// arrow from the application; what the engine did follows as arrows
// between lanes: packets between QPs, completions from a QP into its CQ,
// an arm firing from a CQ into its channel, async events into the queue
// of their context; anything else is a note on its lane.

// Diagram geometry, in SVG user units (pixels at 100%).
const (
	laneW    = 130 // the distance between two lanes: six fit 1400 px beside the page's panel
	leftW    = 120 // the step column
	headH    = 56  // the lane headings
	rowH     = 24  // one arrow or note
	bandPad  = 8   // above and below each step's rows
	charW    = 7.3 // the width of a character of the 12px label font, roughly
	fontSize = 12
	maxW     = 900 // labels may widen a diagram of few lanes up to this
)

// lane is one column of the diagram.
type lane struct {
	key   string // "app", "qp qa", "cq A", "channel ch", "srq s", "async ctx"
	label string
	sub   string // a second heading line: device, type
	kind  string // app, qp, srq, cq, channel, async
	from  int    // the step the object first appears in (its lifeline starts there)
	to    int    // the step that destroyed it (its lifeline ends there), or -1
	x     float64
}

// item is one arrow or note of a step.
type item struct {
	from, to int    // lane indexes; to == from for a note
	label    string // shown, possibly cut
	full     string // the tooltip
	class    string // call, ret, pkt, drop, wc, event, async, note, err
}

// band is one step of the diagram.
type band struct {
	n      int // the step number, from 1
	y, h   float64
	time   string
	cmd    string
	items  []item
	failed bool
}

// diagram is the laid-out picture of a timeline.
type diagram struct {
	r     *Result
	lanes []lane
	bands []band
	w, h  float64
}

// refArg finds an object argument of a command (the script's own text).
var refArg = regexp.MustCompile(`\b(qp|cq|channel|srq|ctx|a)=(\S+)`)

// layout builds the diagram of r.
func layout(r *Result) *diagram {
	d := &diagram{r: r}
	idx := map[string]int{}
	add := func(key, label, sub, kind string, step int) {
		if _, ok := idx[key]; ok {
			return
		}
		idx[key] = len(d.lanes)
		d.lanes = append(d.lanes, lane{key: key, label: label, sub: sub, kind: kind, from: step, to: -1})
	}
	add("app", "application", "your program", "app", 0)
	// Lanes by kind, each kind in order of first appearance.
	for _, kind := range []string{"qp", "srq", "cq", "channel", "async"} {
		for i, st := range r.Steps {
			s := st.State
			switch kind {
			case "qp":
				for _, q := range s.QPs {
					add("qp "+q.Name, "QP "+q.Name, fmt.Sprintf("%s %#x on %s", q.Type, q.Num, q.Device), kind, i)
				}
			case "srq":
				for _, q := range s.SRQs {
					add("srq "+q.Name, "SRQ "+q.Name, "shared RQ", kind, i)
				}
			case "cq":
				for _, c := range s.CQs {
					add("cq "+c.Name, "CQ "+c.Name, "on "+c.Device, kind, i)
				}
			case "channel":
				for _, c := range s.Channels {
					add("channel "+c.Name, "channel "+c.Name, "comp. channel", kind, i)
				}
			case "async":
				for _, a := range s.Async {
					if len(a.Pending) > 0 || a.Read > 0 {
						add("async "+a.Ctx, "async "+a.Ctx, "events of "+a.Ctx, kind, i)
					}
				}
			}
		}
	}
	for i := range d.lanes {
		d.lanes[i].x = leftW + laneW/2 + float64(i)*laneW
	}
	// A lifeline ends at the step whose destroy verb succeeded.
	for i, st := range r.Steps {
		f := strings.Fields(st.Command)
		if st.Errno != "" || len(f) < 2 || !strings.HasPrefix(f[0], "destroy_") {
			continue
		}
		if m := refArg.FindStringSubmatch(st.Command); m != nil {
			k := m[1]
			if k == "a" {
				k = "qp"
			}
			if j, ok := idx[k+" "+m[2]]; ok && d.lanes[j].to < 0 {
				d.lanes[j].to = i
			}
		}
	}
	// The QP lane of (device, qp_num).
	qpLane := func(dev string, num uint32) (int, bool) {
		for _, st := range r.Steps {
			for _, q := range st.State.QPs {
				if q.Num == num && (dev == "" || q.Device == dev) {
					i, ok := idx["qp "+q.Name]
					return i, ok
				}
			}
		}
		return 0, false
	}
	cqOf := func(name string) (CQState, bool) {
		for _, st := range r.Steps {
			for _, c := range st.State.CQs {
				if c.Name == name {
					return c, true
				}
			}
		}
		return CQState{}, false
	}
	y := float64(headH)
	var prevT uint64
	for i, st := range r.Steps {
		b := band{n: i + 1, y: y, cmd: st.Command, failed: st.Errno != ""}
		if i == 0 || st.State.TimeNS != prevT {
			b.time = fmtTime(st.State.TimeNS)
		}
		prevT = st.State.TimeNS
		// The call.
		target := 0
		// A create names its new object with a bare word: the arrow goes
		// to that object's lane, not to the CQ or SRQ it names (create_qp
		// qa cq=cqa is a call on qa).
		if f := strings.Fields(st.Command); strings.HasPrefix(f[0], "create_") && len(f) > 1 && !strings.Contains(f[1], "=") {
			for _, k := range []string{"qp", "cq", "channel", "srq"} {
				if j, ok := idx[k+" "+f[1]]; ok {
					target = j
				}
			}
		}
		if m := refArg.FindStringSubmatch(st.Command); m != nil && target == 0 {
			k := m[1]
			if k == "a" {
				k = "qp"
			}
			if k == "ctx" && strings.Contains(st.Command, "async") {
				k = "async"
			}
			if j, ok := idx[k+" "+m[2]]; ok {
				target = j
			}
		}
		if target == 0 { // a create names its new object with a bare word
			if f := strings.Fields(st.Command); len(f) > 1 && !strings.Contains(f[1], "=") {
				for _, k := range []string{"qp", "cq", "channel", "srq"} {
					if j, ok := idx[k+" "+f[1]]; ok {
						target = j
					}
				}
			}
		}
		said := ""
		if len(st.Said) > 0 {
			said = st.Said[0]
		}
		cls := "call"
		if b.failed {
			cls = "err"
		}
		label := st.Command
		if b.failed {
			label += "  → " + st.Errno
		}
		verb := strings.Fields(st.Command)[0]
		if verb == "complete" && target > 0 {
			b.items = append(b.items, item{from: target, to: target, label: "adapter writes a WC", full: said, class: "wc"})
		} else {
			b.items = append(b.items, item{from: 0, to: target, label: label, full: strings.Join(st.Said, "\n"), class: cls})
		}
		// What the engine did.
		sentTo := map[int]bool{}
		for i := range st.Engine {
			b.items = engineItem(b.items, &st.Engine[i], idx, sentTo, qpLane, cqOf)
		}
		// What came back to the application.
		if st.Errno == "" && target > 0 {
			switch verb {
			case "poll_cq":
				if len(st.Said) > 1 {
					b.items = append(b.items, item{from: target, to: 0, label: strings.Join(strings.Fields(st.Said[1]), " ") + plural(len(st.Said)-1), full: strings.Join(st.Said, "\n"), class: "ret"})
				} else {
					// Nothing polled is an answer too: "0: the CQ is empty".
					b.items = append(b.items, item{from: target, to: 0, label: after(said, " = "), full: said, class: "ret"})
				}
			case "get_cq_event", "get_async_event":
				b.items = append(b.items, item{from: target, to: 0, label: "event: " + strings.TrimSpace(after(said, ": ")), full: said, class: "ret"})
			}
		}
		b.h = 2*bandPad + float64(len(b.items))*rowH
		y += b.h
		d.bands = append(d.bands, b)
	}
	// Wide enough for the lanes, and for the labels that run right of
	// them up to maxW (beyond that they are cut).
	d.w = leftW + float64(len(d.lanes))*laneW
	need := d.w
	for _, b := range d.bands {
		for _, it := range b.items {
			x := min(d.lanes[it.from].x, d.lanes[it.to].x) + 6
			need = max(need, x+float64(len([]rune(it.label)))*charW+12)
		}
	}
	d.w = max(d.w, min(need, maxW))
	d.h = y + 12
	return d
}

// engineItem appends to items the arrow or note of e, one thing the engine
// did in a step, read from its fields: a packet sent is an arrow to the
// QP it is addressed to (whose receipt then needs no arrow of its own), a
// completion an arrow from its QP into its CQ, an arm firing one from the
// CQ into its channel, an async event one from its object into its
// context's queue; anything else a note on its object's lane. idx maps a
// lane's key to its index; sentTo collects the lanes an arrow of the step
// ends at.
func engineItem(items []item, e *trace.Record, idx map[string]int, sentTo map[int]bool,
	qpLane func(dev string, num uint32) (int, bool), cqOf func(name string) (CQState, bool)) []item {
	obj, ok := idx[e.Object]
	full := "at " + fmtTime(e.Tick) + "  " + e.Line()
	switch {
	case ok && e.Kind == trace.KindPacket && e.Name == "send" && e.Packet != nil:
		p := *e.Packet
		p.First, p.Last = false, false
		lbl := p.String()
		if to, ok := idx[e.Peer]; ok {
			sentTo[to] = true
			return append(items, item{from: obj, to: to, label: lbl, full: full, class: "pkt"})
		}
		return append(items, item{from: obj, to: obj, label: "sends " + lbl, full: full, class: "note"})
	case ok && e.Kind == trace.KindPacket && e.Name == "receive" && sentTo[obj]:
		return items // the arrow of its send already ends here
	case ok && e.Kind == trace.KindPacket && (e.Name == "drop" || e.Name == "UD datagram dropped"):
		return append(items, item{from: obj, to: obj, label: "✕ " + e.What(), full: full, class: "drop"})
	case ok && e.Kind == trace.KindCompletion && e.Name == "completion" && e.WC != nil:
		c, _ := cqOf(strings.TrimPrefix(e.Object, "cq "))
		if from, ok := qpLane(c.Device, e.WC.QPNum); ok {
			// A success shows its opcode, an error its status (the
			// opcode of an error WC is not valid: FLUSH-06), by their C
			// names as the rest of the timeline prints them.
			st := e.WC.Status.String()
			if e.WC.Status == verbs.WCSuccess {
				st = e.WC.Opcode.String()
			}
			return append(items, item{from: from, to: obj, label: fmt.Sprintf("WC wr_id %d %s", e.WC.WRID, st), full: full, class: "wc"})
		}
		return append(items, item{from: obj, to: obj, label: e.What(), full: full, class: "wc"})
	case ok && e.Kind == trace.KindCompletion && e.WC != nil:
		// A completion lost to an overrun, or a WR that failed at its QP:
		// a short note, the whole record in its tooltip.
		what := e.WC.Status.String()
		if e.Name == "overrun" {
			what = "lost"
		}
		return append(items, item{from: obj, to: obj, label: fmt.Sprintf("%s: wr_id %d %s", e.Name, e.WC.WRID, what), full: full, class: "note"})
	case ok && e.Kind == trace.KindEvent && e.Name == "arm fired":
		c, _ := cqOf(strings.TrimPrefix(e.Object, "cq "))
		if to, ok := idx["channel "+c.Channel]; ok {
			return append(items, item{from: obj, to: to, label: "arm fired: event", full: full, class: "event"})
		}
		return append(items, item{from: obj, to: obj, label: e.What(), full: full, class: "event"})
	case e.Kind == trace.KindEvent && e.Name == "raise" && e.Async != nil:
		if to, ok := idx["async "+strings.TrimPrefix(e.Object, "ctx ")]; ok {
			from, fok := idx[e.Peer]
			if !fok {
				from = to
			}
			return append(items, item{from: from, to: to, label: e.Async.Type.String(), full: full, class: "async"})
		}
		return append(items, item{from: 0, to: 0, label: e.What(), full: full, class: "async"})
	}
	if !ok {
		obj = 0
	}
	return append(items, item{from: obj, to: obj, label: e.What(), full: full, class: "note"})
}

func plural(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (+%d more)", n-1)
	}
	return ""
}

func after(s, sep string) string {
	if _, a, ok := strings.Cut(s, sep); ok {
		return a
	}
	return s
}

// cut shortens s to fit w pixels.
func cut(s string, w float64) string {
	n := int(w / charW)
	r := []rune(s)
	if n < 4 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

var esc = template.HTMLEscapeString

// svgStyle is the diagram's stylesheet, inside the SVG so that the file
// stands alone.
const svgStyle = `
text{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;fill:#1d2330}
.lanehead rect{fill:#eef2f8;stroke:#8a97ab}
.lanehead .t{font-weight:bold;font-size:13px}
.lanehead .s{fill:#5a6578;font-size:11px}
.life{stroke:#b7c0cf;stroke-dasharray:4 4}
.end{stroke:#5a6578;stroke-width:2;fill:none}
.band rect.bg{fill:#fff}
.band.odd rect.bg{fill:#f7f9fc}
.band.cur rect.bg{fill:#fff4c8}
.num{font-weight:bold;font-size:13px}
.tm{fill:#6b7486;font-size:11px}
.call line{stroke:#1f5fbf;stroke-width:1.6}.call text{fill:#1f5fbf}
.err line{stroke:#c62828;stroke-width:1.6}.err text{fill:#c62828}
.ret line{stroke:#1f5fbf;stroke-dasharray:5 3}.ret text{fill:#1f5fbf}
.pkt line{stroke:#6d4c9f;stroke-width:1.6}.pkt text{fill:#6d4c9f}
.wc line{stroke:#1b7f3b;stroke-width:1.6}.wc text{fill:#1b7f3b}
.event line{stroke:#c26a00;stroke-width:1.6}.event text{fill:#c26a00}
.async line{stroke:#c62828;stroke-width:1.6}.async text{fill:#c62828}
.drop text{fill:#c62828}
.note text{fill:#3d4659}
g.items rect{fill:#fff;stroke:#c5ccd8}
`

// writeSVG writes the diagram. standalone adds the XML declaration and the
// lane headings (the page draws those in a header of its own).
func (d *diagram) writeSVG(w io.Writer, standalone bool) error {
	var b strings.Builder
	top := 0.0
	if standalone {
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	} else {
		top = headH - 4
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 %.0f %.0f %.0f" role="img" aria-label="%s">`+"\n",
		d.w, d.h-top, top, d.w, d.h-top, esc("sequence diagram of "+d.r.File))
	fmt.Fprintf(&b, "<title>%s, profile %s</title>\n", esc(d.r.File), esc(d.r.Profile))
	b.WriteString("<defs><style>" + svgStyle + "</style>\n")
	for _, m := range []struct{ id, color string }{{"call", "#1f5fbf"}, {"err", "#c62828"}, {"pkt", "#6d4c9f"}, {"wc", "#1b7f3b"}, {"event", "#c26a00"}, {"async", "#c62828"}, {"ret", "#1f5fbf"}} {
		fmt.Fprintf(&b, `<marker id="h-%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`+"\n", m.id, m.color)
	}
	b.WriteString("</defs>\n")
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="#fff"/>`+"\n", d.w, d.h)
	// Bands first, so lifelines and arrows lie over their backgrounds.
	for i, bd := range d.bands {
		odd := ""
		if i%2 == 1 {
			odd = " odd"
		}
		fmt.Fprintf(&b, `<g class="band%s" id="step-%d" data-step="%d">`, odd, bd.n, bd.n)
		fmt.Fprintf(&b, `<rect class="bg" x="0" y="%.0f" width="%.0f" height="%.0f"/>`, bd.y, d.w, bd.h)
		fmt.Fprintf(&b, `<text class="num" x="10" y="%.0f">[%d]</text>`, bd.y+bandPad+16, bd.n)
		if bd.time != "" {
			fmt.Fprintf(&b, `<text class="tm" x="52" y="%.0f">%s</text>`, bd.y+bandPad+16, esc(bd.time))
		}
		b.WriteString("</g>\n")
	}
	for _, l := range d.lanes {
		top, bottom := float64(headH), d.h-6
		if l.from < len(d.bands) {
			top = d.bands[l.from].y
		}
		if l.to >= 0 && l.to < len(d.bands) {
			bottom = d.bands[l.to].y + d.bands[l.to].h
		}
		fmt.Fprintf(&b, `<line class="life" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`+"\n", l.x, top, l.x, bottom)
		if l.to >= 0 {
			// The UML mark of a destroyed object: a cross where its lifeline ends.
			fmt.Fprintf(&b, `<path class="end" d="M%.0f,%.0f l10,10 m0,-10 l-10,10"><title>%s destroyed in step %d</title></path>`+"\n",
				l.x-5, bottom-8, esc(l.label), l.to+1)
		}
	}
	for _, bd := range d.bands {
		fmt.Fprintf(&b, `<g class="items" data-step="%d">`+"\n", bd.n)
		for k, it := range bd.items {
			y := bd.y + bandPad + float64(k)*rowH + rowH/2 + 4
			d.writeItem(&b, it, y)
		}
		b.WriteString("</g>\n")
	}
	if standalone {
		d.writeHeads(&b)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeadSVG writes the lane headings alone, for the page's sticky
// header.
func (d *diagram) writeHeadSVG(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%d" viewBox="0 0 %.0f %d" aria-hidden="true">`, d.w, headH-4, d.w, headH-4)
	d.writeHeads(&b)
	b.WriteString("</svg>")
	_, err := io.WriteString(w, b.String())
	return err
}

func (d *diagram) writeHeads(b *strings.Builder) {
	// Lane headings last, on top.
	b.WriteString(`<g class="lanehead">`)
	fmt.Fprintf(b, `<rect x="0" y="0" width="%.0f" height="%d" style="fill:#fff;stroke:none"/>`, d.w, headH-6)
	fmt.Fprintf(b, `<text class="t" x="10" y="22">step</text><text class="s" x="10" y="40">virtual time</text>`)
	for _, l := range d.lanes {
		fmt.Fprintf(b, `<rect x="%.0f" y="6" width="%d" height="%d" rx="5"/>`, l.x-laneW/2+8, laneW-16, headH-16)
		fmt.Fprintf(b, `<text class="t" x="%.0f" y="24" text-anchor="middle">%s</text>`, l.x, esc(cut(l.label, laneW-20)))
		fmt.Fprintf(b, `<text class="s" x="%.0f" y="39" text-anchor="middle">%s</text>`, l.x, esc(cut(l.sub, laneW-20)))
	}
	b.WriteString("</g>\n")
}

func (d *diagram) writeItem(b *strings.Builder, it item, y float64) {
	fmt.Fprintf(b, `<g class="%s"><title>%s</title>`, it.class, esc(it.full))
	x1, x2 := d.lanes[it.from].x, d.lanes[it.to].x
	if it.from == it.to {
		// A note: a box on the lane, its text running right.
		room := d.w - x1 - 14
		lbl := cut(it.label, room)
		wd := float64(len([]rune(lbl)))*charW + 10
		fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%d" rx="3"/>`, x1-5, y-14, wd, rowH-5)
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f">%s</text></g>`+"\n", x1, y, esc(lbl))
		return
	}
	marker := it.class
	if marker == "drop" || marker == "note" {
		marker = "pkt"
	}
	ly := y + 3
	dir := 1.0
	if x2 < x1 {
		dir = -1
	}
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" marker-end="url(#h-%s)"/>`, x1, ly, x2-dir*2, ly, marker)
	// The label sits above the arrow, from its tail, and may run past its
	// head when the arrow is short.
	room := d.w - min(x1, x2) - 12
	lbl := cut(it.label, room)
	tx := min(x1, x2) + 6
	if x2 < x1 {
		tx += 8 // clear of the arrowhead
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f">%s</text></g>`+"\n", tx, ly-5, esc(lbl))
}

// WriteSVG writes the timeline as a standalone SVG sequence diagram.
func (r *Result) WriteSVG(w io.Writer) error {
	return layout(r).writeSVG(w, true)
}
