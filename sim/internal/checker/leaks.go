package checker

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/sim/check"
)

// leaksLocked reports the objects still alive, and the events read and
// never acknowledged, as verb ends the program's use of them: the exit
// (ctx nil: every object), or the close of the device context ctx (its
// objects). Objects created at one place are reported together.
func (c *Checker) leaksLocked(verb string, ctx any) {
	type group struct {
		kind  string
		where string
		recs  []*record
	}
	var groups []*group
	byKey := map[string]*group{}
	at := c.hereLocked()
	for _, r := range c.order {
		if r.gone != nil || r.kind == "" || r.kind == "async" {
			continue
		}
		if ctx != nil && (r.obj == ctx || c.env.Context(r.obj) != ctx) {
			continue
		}
		if n := len(r.reads) + len(r.asyncReads); n > 0 {
			rule := "CQ-13"
			if len(r.reads) == 0 {
				rule = "ASYNC-05"
			}
			f := check.Finding{Check: check.Leak, Rule: rule, Verb: verb, Objects: []check.Object{c.object(r)},
				What: fmt.Sprintf("%d event%s read about %s %s never acknowledged", n, plural(n, "", "s"), c.env.Name(r.obj), plural(n, "was", "were")),
				Then: "destroying it would wait for ever (CQ-13, ASYNC-05); acknowledge every event read"}
			for _, s := range r.reads {
				f.Related = append(f.Related, c.related("completion event read", s))
			}
			for _, s := range r.asyncReads {
				f.Related = append(f.Related, c.related("async event read", s))
			}
			c.finding(f, at)
		}
		where := ""
		if fr := c.frames(r.created); len(fr) > 0 {
			where = fr[0].Site()
		}
		k := r.kind + "|" + where
		g := byKey[k]
		if g == nil {
			g = &group{kind: r.kind, where: where}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.recs = append(g.recs, r)
	}
	for _, g := range groups {
		n := len(g.recs)
		names := make([]string, 0, 4)
		objs := make([]check.Object, 0, 4)
		for i, r := range g.recs {
			if i == 4 {
				names = append(names, fmt.Sprintf("and %d more", n-4))
				break
			}
			names = append(names, c.env.Name(r.obj))
			objs = append(objs, c.object(r))
		}
		then := plural(n, "its", "their") + " resources stay allocated until the process exits (USE-03); destroy objects in the order of PD-05"
		if verb == "ibv_close_device" {
			then = "ibv_close_device does not destroy " + plural(n, "it", "them") + " (USE-03); destroy objects first, in the order of PD-05"
		}
		c.finding(check.Finding{Check: check.Leak, Rule: "USE-03", Verb: verb, Objects: objs,
			What: fmt.Sprintf("%d %s%s created here %s never destroyed: %s", n, kindName(g.kind), plural(n, "", "s"),
				plural(n, "was", "were"), strings.Join(names, ", ")),
			Then: then}, g.recs[0].created)
	}
}

// kindName names a kind of object for people.
func kindName(kind string) string {
	switch kind {
	case "chan":
		return "completion channel"
	case "ctx":
		return "device context"
	}
	return strings.ToUpper(kind)
}
