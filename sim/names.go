package sim

// The trace names of sim's own objects (see tracing.go).

func (a *AH) traceName() string          { return a.tname }
func (a *AH) setTraceName(n string)      { a.tname = n }
func (c *Context) traceName() string     { return c.tname }
func (c *Context) setTraceName(n string) { c.tname = n }
func (m *MR) traceName() string          { return m.tname }
func (m *MR) setTraceName(n string)      { m.tname = n }
func (m *MW) traceName() string          { return m.tname }
func (m *MW) setTraceName(n string)      { m.tname = n }
func (pd *PD) traceName() string         { return pd.tname }
func (pd *PD) setTraceName(n string)     { pd.tname = n }
func (x *XRCD) traceName() string        { return x.tname }
func (x *XRCD) setTraceName(n string)    { x.tname = n }
func (dm *DM) traceName() string         { return dm.tname }
func (dm *DM) setTraceName(n string)     { dm.tname = n }
