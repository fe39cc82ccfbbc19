package scenario

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/internal/catalogue"
)

// runTour runs one tour scenario under the default profile.
func runTour(t *testing.T, name string) *Result {
	t.Helper()
	return runTourProfile(t, name, "default")
}

// runTourProfile runs one tour scenario under the named profile.
func runTourProfile(t *testing.T, name, profile string) *Result {
	t.Helper()
	src, err := fs.ReadFile(Tour, "tour/"+name+".scen")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("tour/"+name+".scen", src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, profile)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wellFormed decodes every token of an XML (or, not strict, HTML)
// document and counts the elements of each name.
func wellFormed(t *testing.T, doc []byte, strict bool) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	if !strict {
		d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	}
	n := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("not well formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			n[se.Name.Local]++
		}
	}
}

// TestSVG: every tour scenario's diagram is well-formed XML with a lane
// heading per object and one numbered band per step.
func TestSVG(t *testing.T) {
	for _, f := range TourFiles() {
		name := strings.TrimSuffix(filepath.Base(f), ".scen")
		r := runTour(t, name)
		var b bytes.Buffer
		if err := r.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		n := wellFormed(t, b.Bytes(), true)
		if n["svg"] != 1 || n["line"] == 0 || n["marker"] == 0 {
			t.Errorf("%s: elements %v", name, n)
		}
		for i := range r.Steps {
			if !bytes.Contains(b.Bytes(), []byte(`id="step-`+itoa(i+1)+`"`)) {
				t.Errorf("%s: no band for step %d", name, i+1)
			}
		}
	}
	// The lanes and arrows of one scenario with packets, completions and
	// an async event.
	var b bytes.Buffer
	if err := runTour(t, "13-remote-access").WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	// The engine's records are read by their fields: the requester's note
	// on its failed WR is no packet it sends.
	for _, want := range []string{">QP qa<", ">QP qb<", ">CQ cqb<", ">async cb<", ">RC WRITE psn=1 len=64<", ">WC wr_id 2 IBV_WC_REM_ACCESS_ERR<",
		">IBV_EVENT_QP_ACCESS_ERR<", `class="pkt"`, ">responder error: NAK_REM_ACCESS<", ">send WR failed: wr_id 2 IBV_WC_REM_ACCESS_ERR<"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("13-remote-access.svg lacks %q", want)
		}
	}
	if strings.Contains(b.String(), ">sends ") {
		t.Error("13-remote-access.svg has a note of a packet sent nowhere")
	}
	b.Reset()
	if err := runTour(t, "08-overrun").WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if want := ">overrun: wr_id 2 lost<"; !strings.Contains(b.String(), want) {
		t.Errorf("08-overrun.svg lacks %q", want)
	}
	// A poll that returns nothing is answered too.
	b.Reset()
	if err := runTour(t, "12-retry-exceeded").WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if want := ">0: the CQ is empty<"; !strings.Contains(b.String(), want) {
		t.Errorf("12-retry-exceeded.svg lacks %q: the empty poll of cqb has no label", want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestHTML: the page is one self-contained document: inline style, script
// and SVG, no reference to anything outside, the controls, and every
// step's data.
func TestHTML(t *testing.T) {
	r := runTour(t, "02-arm-once")
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// The decoder does not know that a script's text is raw: check the
	// markup around it.
	script := regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	if m := script.FindStringSubmatch(page); m == nil || !strings.Contains(m[1], "const steps = [") {
		t.Fatalf("no inline script with the steps")
	}
	n := wellFormed(t, []byte(script.ReplaceAllString(page, "<script></script>")), false)
	if n["html"] != 1 || n["style"] != 2 || n["script"] != 1 || n["svg"] != 2 || n["button"] != 5 {
		t.Errorf("elements: %v", n)
	}
	for _, id := range []string{"prev", "next", "jump", "slider", "zin", "zout", "zfit", "diagram", "panel", "state", "out", "cmd", "rules", "step-1", "step-15"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("no element with id %q", id)
		}
	}
	noNS := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	if m := regexp.MustCompile(`(?i)(\bsrc\s*=|\bhref\s*=|https?://|<link\b|@import)`).FindString(noNS); m != "" {
		t.Errorf("the page refers to something outside itself: %q", m)
	}
	// A rule the timeline cuts short is there whole, for the page to
	// unfold: CHAN-07's title ends in "…".
	whole, ok := catalogue.Lookup("CHAN-07")
	if !ok {
		t.Fatal("no CHAN-07 in the catalogue")
	}
	full := strings.Join(strings.Fields(strings.ReplaceAll(whole.Text, "**", "")), " ")
	for _, want := range []string{`"command":"req_notify_cq cq=A next"`, `"n":15`, "ArrowRight", "ArrowLeft", "details",
		`"id":"CHAN-07","text":"` + catalogue.Title(whole.Text) + `","full":"` + full + `"`} {
		unescaped := strings.NewReplacer(`\u0022`, `"`, `\u0060`, "`", `\u0026`, "&", `\u003c`, "<", `\u003e`, ">", `\u0027`, "'").Replace(page)
		if !strings.Contains(page, want) && !strings.Contains(unescaped, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The rules are listed apart, not inside the step's output.
	if strings.Contains(page, `rules:\n`) {
		t.Error("a step's output on the page still holds its rules")
	}
}

// TestHTMLInChromium renders the page in headless Chromium, when it is
// installed, and checks the screenshot is not blank and the console has
// no error.
func TestHTMLInChromium(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("no " + chromium)
	}
	if testing.Short() {
		t.Skip("renders in a browser: not with -short")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "page.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := runTour(t, "13-remote-access").WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	shot := filepath.Join(dir, "page.png")
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--screenshot="+shot, "--window-size=1400,1000", "file://"+page+"#16")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("chromium did not finish in 60 s")
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") {
			t.Errorf("console: %s", l)
		}
	}
	pf, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}
	colors := map[uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 7 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r>>11<<10|g>>11<<5|b>>11] = true
		}
	}
	if bnd.Dx() != 1400 || len(colors) < 20 {
		t.Errorf("screenshot %v with %d colours: blank?", bnd, len(colors))
	}
}

// docPictures are the diagrams of docs/img: every tour scenario under the
// default profile (NAME.svg), and the one about the profiles under rxe as
// well (NAME.rxe.svg).
func docPictures(t *testing.T) map[string]func() *Result {
	t.Helper()
	files, err := fs.Glob(Tour, "tour/*.scen")
	if err != nil || len(files) == 0 {
		t.Fatalf("no tour scenarios: %v", err)
	}
	out := map[string]func() *Result{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".scen")
		out[name+".svg"] = func() *Result { return runTourProfile(t, name, "default") }
	}
	out["16-profiles-disagree.rxe.svg"] = func() *Result { return runTourProfile(t, "16-profiles-disagree", "rxe") }
	return out
}

// TestDocPictures: the diagrams in docs/img are those the scenarios draw
// now, one per tour scenario, and no SVG there is left over from a
// scenario that is gone. bash scripts/scenario-pictures.sh regenerates
// them (and the PNGs); so does go test ./internal/scenario -run
// TestDocPictures -rewrite (the SVGs only).
func TestDocPictures(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "img")
	want := docPictures(t)
	for file, run := range want {
		path := filepath.Join(dir, file)
		var got bytes.Buffer
		if err := run().WriteSVG(&got); err != nil {
			t.Fatal(err)
		}
		if *rewrite {
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("docs/img/%s: %v; bash scripts/scenario-pictures.sh draws it", file, err)
			continue
		}
		if got.String() != string(have) {
			t.Errorf("docs/img/%s is stale: bash scripts/scenario-pictures.sh regenerates it", file)
		}
	}
	svgs, err := filepath.Glob(filepath.Join(dir, "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range svgs {
		if want[filepath.Base(p)] == nil {
			t.Errorf("docs/img/%s is no tour scenario's diagram: remove it, or add its scenario", filepath.Base(p))
		}
	}
}

// TestTutorialExcerpts: every text block of docs/verbs-in-one-hour.md is
// an excerpt of the timeline of the scenario its section runs (the last
// `verbsim run [-profile P] NAME` above it): its parts, separated by lines
// of "...", appear in that timeline in order, each line for line.
func TestTutorialExcerpts(t *testing.T) {
	page := filepath.Join("..", "..", "docs", "verbs-in-one-hour.md")
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	runLine := regexp.MustCompile(`verbsim run (?:-profile (\S+) )?(\d\d-[a-z0-9-]+)\s*$`)
	name, profile := "", "default"
	var block []string
	inBlock, blocks := false, 0
	for i, line := range strings.Split(string(src), "\n") {
		switch {
		case !inBlock && line == "```text":
			inBlock, block = true, nil
		case inBlock && line == "```":
			inBlock = false
			blocks++
			if name == "" {
				t.Errorf("%s:%d: a timeline excerpt before any verbsim run NAME", page, i+1)
				continue
			}
			var out bytes.Buffer
			if err := runTourProfile(t, name, profile).WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if msg := excerptOf(block, strings.Split(out.String(), "\n")); msg != "" {
				t.Errorf("%s:%d: not an excerpt of verbsim run %s (profile %s): %s", page, i+1-len(block), name, profile, msg)
			}
		case inBlock:
			block = append(block, line)
		default:
			if m := runLine.FindStringSubmatch(line); m != nil && !strings.Contains(line, "-trace") {
				name, profile = m[2], "default"
				if m[1] != "" {
					profile = m[1]
				}
			}
		}
	}
	if blocks < 16 {
		t.Errorf("%d timeline excerpts, want one per tour scenario at least", blocks)
	}
}

// excerptOf returns "" when the parts of block (separated by "...") are
// runs of consecutive lines of timeline, in order, or what is amiss.
func excerptOf(block, timeline []string) string {
	at := 0
	var part []string
	flush := func() string {
		if len(part) == 0 {
			return ""
		}
		for j := at; j+len(part) <= len(timeline); j++ {
			if slicesEqualStr(timeline[j:j+len(part)], part) {
				at, part = j+len(part), nil
				return ""
			}
		}
		return fmt.Sprintf("the part beginning %q is not there (after line %d)", part[0], at)
	}
	for _, l := range block {
		if l == "..." {
			if msg := flush(); msg != "" {
				return msg
			}
			continue
		}
		part = append(part, l)
	}
	return flush()
}

func slicesEqualStr(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDocImagesExist: every picture a page of docs/ shows is in docs/img.
func TestDocImagesExist(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	img := regexp.MustCompile(`\]\((img/[^)]+)\)`)
	n := 0
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range img.FindAllStringSubmatch(string(src), -1) {
			n++
			if _, err := os.Stat(filepath.Join("..", "..", "docs", m[1])); err != nil {
				t.Errorf("%s shows %s: %v", filepath.Base(p), m[1], err)
			}
		}
	}
	if n < 20 {
		t.Errorf("%d pictures in the pages, want the tour's diagrams at least", n)
	}
}

// TestLifelinesEnd: a lane ends, with a cross, at the step whose destroy
// succeeded (not at a destroy that failed), and six lanes fit the page's
// diagram pane in a 1400-pixel window (1400 - the 440-pixel panel - a
// scroll bar) at 100%.
func TestLifelinesEnd(t *testing.T) {
	var b bytes.Buffer
	if err := runTour(t, "07-acks-and-destroy").WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	ends := regexp.MustCompile(`<path class="end"[^>]*><title>([^<]*)</title>`).FindAllStringSubmatch(b.String(), -1)
	if len(ends) != 2 || ends[0][1] != "CQ A destroyed in step 12" || ends[1][1] != "channel ch destroyed in step 14" {
		t.Errorf("lifeline ends: %q", ends)
	}
	d := layout(runTour(t, "13-remote-access"))
	if len(d.lanes) != 6 || d.w > 1400-440-15 {
		t.Errorf("%d lanes, %v pixels wide", len(d.lanes), d.w)
	}
	// create_qp qa pd=pa cq=cqa is a call on the new QP, not on its CQ.
	if it := d.bands[5].items[0]; d.lanes[it.to].key != "qp qa" {
		t.Errorf("step 6 (%s) points at lane %s", d.bands[5].cmd, d.lanes[it.to].key)
	}
	for _, l := range d.lanes {
		if want := map[string]int{"qp qa": 23}[l.key]; l.to != want && (want != 0 || l.to != -1) {
			t.Errorf("lane %s ends at step index %d", l.key, l.to)
		}
	}
}
