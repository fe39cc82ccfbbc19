package scenario

import (
	"bytes"
	"encoding/xml"
	"errors"
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
)

// runTour runs one tour scenario under the default profile.
func runTour(t *testing.T, name string) *Result {
	t.Helper()
	src, err := fs.ReadFile(Tour, "tour/"+name+".scen")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("tour/"+name+".scen", src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, "default")
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
	for _, want := range []string{">QP qa<", ">QP qb<", ">CQ cqb<", ">async cb<", ">RC WRITE psn=1 len=64<", ">WC wr_id 2 REM_ACCESS_ERR<", ">QP_ACCESS_ERR<", `class="pkt"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("13-remote-access.svg lacks %q", want)
		}
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
	if n["html"] != 1 || n["style"] != 2 || n["script"] != 1 || n["svg"] != 2 || n["button"] != 2 {
		t.Errorf("elements: %v", n)
	}
	for _, id := range []string{"prev", "next", "jump", "slider", "diagram", "panel", "state", "out", "cmd", "step-1", "step-15"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("no element with id %q", id)
		}
	}
	noNS := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	if m := regexp.MustCompile(`(?i)(\bsrc\s*=|\bhref\s*=|https?://|<link\b|@import)`).FindString(noNS); m != "" {
		t.Errorf("the page refers to something outside itself: %q", m)
	}
	for _, want := range []string{`"command":"req_notify_cq cq=A next"`, `"n":15`, "ArrowRight", "ArrowLeft"} {
		if !strings.Contains(page, want) && !strings.Contains(strings.ReplaceAll(page, `\u0022`, `"`), want) {
			t.Errorf("the page lacks %q", want)
		}
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

// TestDocPictures: the diagrams in docs/img are those the scenarios draw
// now; bash scripts/scenario-pictures.sh regenerates them (and the PNGs).
func TestDocPictures(t *testing.T) {
	for _, name := range []string{"06-lost-wakeup", "13-remote-access"} {
		want, err := os.ReadFile(filepath.Join("..", "..", "docs", "img", name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := runTour(t, name).WriteSVG(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("docs/img/%s.svg is stale: bash scripts/scenario-pictures.sh regenerates it", name)
		}
	}
}
