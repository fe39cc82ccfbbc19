package explore

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A replay token carries a schedule's choices and what is needed to run
// them again (the fault budget, the step bound, whether unconsumed
// completions fail), the world's name if it has one, and the world's
// identity: a hash of what the world function set up (its objects and
// goroutines, by name) and a hash of the steps of the schedule (who moved,
// with which verb on which object). RunToken refuses a token whose world
// set up other things, or whose steps went otherwise: a token of another
// world, or of this world before it changed, or of a world that is not
// deterministic.

// replayToken runs the schedule of tk once, with a timeline. With check
// set it refuses a run whose identity differs from the token's; otherwise
// it writes the run's identity into tk.
func replayToken(world func(*World), tk *token, check bool) (*Failure, error) {
	o := Options{MaxSteps: int(tk.maxSteps), AllowUnconsumed: tk.allow}.fill()
	o.budget = tk.budget
	p := &replayPicker{choices: tk.choices}
	r := runOnce(world, p, o.MaxSteps, true, &o)
	setup, path := uint32(r.setupHash()), uint32(r.path)
	switch {
	case check && setup != tk.setup:
		return nil, errors.New("explore: the token was recorded on a different world: the world function set up other objects or goroutines, or called other verbs")
	case p.diverged || p.n != len(tk.choices) || (check && path != tk.path):
		return nil, errors.New("explore: the world did not follow the token's schedule: a different world, or one that is not deterministic")
	}
	tk.setup, tk.path = setup, path
	if r.failure == nil {
		return nil, nil
	}
	f := *r.failure
	f.Size = sizeOf(r)
	f.Unshrunk = f.Size
	f.Schedule = int(tk.schedule) + 1
	f.Token = encodeToken(*tk)
	f.Timeline = r.timeline.String()
	return &f, nil
}

func replay(world func(*World), s string) (*Failure, error) {
	tk, err := decodeToken(s)
	if err != nil {
		return nil, err
	}
	return replayToken(world, &tk, true)
}

// token is what a replay token carries.
type token struct {
	strategy Strategy
	seed     uint64
	schedule uint64
	maxSteps uint64
	allow    bool
	name     string
	budget   int // the fault budget (Options.MaxFaults): -1 for no bound
	choices  []int
	// setup and path are the world's identity: hashes of what its
	// function set up and of the schedule's steps.
	setup, path uint32
}

// TokenName returns the world's name a replay token carries (Options.Name;
// "" when none was set).
func TokenName(tok string) (string, error) {
	t, err := decodeToken(tok)
	return t.name, err
}

// tokenPrefix starts a token of this format; oldPrefix one made before
// tokens carried the world's identity.
const (
	tokenPrefix = "vx2."
	oldPrefix   = "vx1."
)

// encodeToken packs t as varints, deflates them and writes them in
// URL-safe base64 behind a version prefix.
func encodeToken(t token) string {
	var raw []byte
	flags := uint64(t.strategy)
	if t.allow {
		flags |= 0x80
	}
	if t.name != "" {
		flags |= 0x40
	}
	if t.budget >= 0 {
		flags |= 0x20
	}
	for _, v := range []uint64{flags, t.seed, t.schedule, t.maxSteps, uint64(len(t.choices)), uint64(t.setup), uint64(t.path)} {
		raw = binary.AppendUvarint(raw, v)
	}
	if t.name != "" {
		raw = binary.AppendUvarint(raw, uint64(len(t.name)))
		raw = append(raw, t.name...)
	}
	if t.budget >= 0 {
		raw = binary.AppendUvarint(raw, uint64(t.budget))
	}
	for _, c := range t.choices {
		raw = binary.AppendUvarint(raw, uint64(c))
	}
	var b bytes.Buffer
	zw, _ := flate.NewWriter(&b, flate.BestCompression)
	zw.Write(raw)
	zw.Close()
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b.Bytes())
}

func decodeToken(s string) (token, error) {
	var t token
	bad := func(why string) (token, error) { return token{}, fmt.Errorf("explore: bad replay token: %s", why) }
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, oldPrefix) {
		return bad("a token of an earlier verbsim (" + oldPrefix + "), which carries no identity of its world: explore again for a " + tokenPrefix + " token")
	}
	if !strings.HasPrefix(s, tokenPrefix) {
		return bad("it does not start with " + tokenPrefix)
	}
	z, err := base64.RawURLEncoding.DecodeString(s[len(tokenPrefix):])
	if err != nil {
		return bad(err.Error())
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), 1<<24))
	if err != nil {
		return bad(err.Error())
	}
	rd := bytes.NewReader(raw)
	var v [7]uint64
	for i := range v {
		if v[i], err = binary.ReadUvarint(rd); err != nil {
			return bad("truncated")
		}
	}
	t.strategy, t.allow, t.seed, t.schedule, t.maxSteps = Strategy(v[0]&0x1f), v[0]&0x80 != 0, v[1], v[2], v[3]
	t.setup, t.path = uint32(v[5]), uint32(v[6])
	if v[4] > uint64(len(raw)) {
		return bad("truncated")
	}
	if v[0]&0x40 != 0 {
		n, err := binary.ReadUvarint(rd)
		if err != nil || n > uint64(rd.Len()) {
			return bad("truncated")
		}
		name := make([]byte, n)
		rd.Read(name)
		t.name = string(name)
	}
	t.budget = -1 // a token made before fault draws were choice points: none were drawn
	if v[0]&0x20 != 0 {
		b, err := binary.ReadUvarint(rd)
		if err != nil || b > 1<<20 {
			return bad("truncated")
		}
		t.budget = int(b)
	}
	t.choices = make([]int, v[4])
	for i := range t.choices {
		c, err := binary.ReadUvarint(rd)
		if err != nil || c > 1<<20 {
			return bad("truncated")
		}
		t.choices[i] = int(c)
	}
	return t, nil
}
