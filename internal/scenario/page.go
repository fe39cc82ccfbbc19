package scenario

import (
	"bytes"
	"html/template"
	"io"
	"strings"
)

// pageStep is one step as the HTML page's script sees it.
type pageStep struct {
	N         int      `json:"n"`
	Narration string   `json:"narration"`
	Command   string   `json:"command"`
	Output    string   `json:"output"`
	State     []string `json:"state"`
	Changed   []string `json:"changed"`
	Time      string   `json:"time"`
	Failed    bool     `json:"failed"`
	Rules     []Rule   `json:"rules"`
}

// WriteHTML writes one self-contained page (inline CSS, script and SVG; no
// network access) that steps through the timeline: the sequence diagram
// on the left with the current step highlighted, and beside it the step's
// narration, command, output and the whole state after it. Next,
// previous, jump to a step, the arrow keys, and a click on the diagram
// move between steps.
func (r *Result) WriteHTML(w io.Writer) error {
	d := layout(r)
	var svg bytes.Buffer
	if err := d.writeSVG(&svg, false); err != nil {
		return err
	}
	var head bytes.Buffer
	if err := d.writeHeadSVG(&head); err != nil {
		return err
	}
	steps := make([]pageStep, len(r.Steps))
	var prev uint64
	for i, st := range r.Steps {
		_, lines := st.State.lines()
		steps[i] = pageStep{N: i + 1, Narration: paragraphs(st.Narration), Command: st.Command, Output: st.block(prev, false),
			State: lines, Changed: st.Changed, Time: fmtTime(st.State.TimeNS), Failed: st.Errno != "", Rules: st.Rules}
		if steps[i].Rules == nil {
			steps[i].Rules = []Rule{}
		}
		prev = st.State.TimeNS
	}
	return pageTemplate.Execute(w, map[string]any{
		"File":    r.File,
		"Profile": r.Profile,
		"Summary": ProfileSummary(r.Profile),
		"SVG":     template.HTML(svg.String()), // generated above, every text escaped
		"Head":    template.HTML(head.String()),
		"Steps":   steps,
		"N":       len(steps),
	})
}

// paragraphs joins narration lines into paragraphs: the lines of a
// paragraph with spaces, so that the page wraps them to its width, and the
// paragraphs, which an empty line separates, with a blank line.
func paragraphs(lines []string) string {
	var out, cur []string
	for _, l := range append(lines, "") {
		if strings.TrimSpace(l) == "" {
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, " "))
			}
			cur = nil
			continue
		}
		cur = append(cur, strings.TrimSpace(l))
	}
	return strings.Join(out, "\n\n")
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.File}}: verbsim timeline ({{.Profile}})</title>
<style>
*{box-sizing:border-box}
html,body{margin:0;height:100%}
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;color:#1d2330;background:#e9edf3;display:flex;flex-direction:column}
header{background:#1d2d4a;color:#fff;padding:8px 14px;display:flex;align-items:center;gap:14px;flex-wrap:wrap}
header h1{font-size:16px;margin:0;font-weight:600}
header .prof{color:#b9c6dc;font-size:13px}
.controls{margin-left:auto;display:flex;gap:6px;align-items:center}
button{font:inherit;padding:4px 12px;border-radius:5px;border:1px solid #8a97ab;background:#fff;color:#1d2330;cursor:pointer}
button:disabled{opacity:.45;cursor:default}
input[type=number]{width:64px;font:inherit;padding:3px 6px;border-radius:5px;border:1px solid #8a97ab}
input[type=range]{width:180px}
.hint{color:#b9c6dc;font-size:12px}
main{flex:1;display:flex;min-height:0}
#diagram{flex:1;overflow:auto;background:#fff;border-right:1px solid #c5ccd8}
#diagram svg{display:block}
.zoom{display:flex;gap:4px;align-items:center}
.zoom button{padding:4px 9px}
#zoomval{min-width:42px;text-align:center}
#heads{position:sticky;top:0;z-index:1;background:#fff;width:max-content;border-bottom:1px solid #d5dbe5}
#heads text{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;fill:#1d2330}
#heads rect{fill:#eef2f8;stroke:#8a97ab}
#heads .t{font-weight:bold;font-size:13px}
#heads .s{fill:#5a6578;font-size:11px}
#diagram .band{cursor:pointer}
#panel{width:440px;flex:none;overflow:auto;padding:12px 16px;background:#f7f9fc}
#panel h2{font-size:15px;margin:0 0 6px}
#panel h3{font-size:13px;margin:14px 0 4px;color:#5a6578;text-transform:uppercase;letter-spacing:.04em}
.narr{white-space:pre-wrap;margin:0 0 8px;font-style:italic;color:#3d4659}
pre,.cmd{font:12.5px/1.45 ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace}
.cmd{background:#1d2d4a;color:#fff;padding:6px 10px;border-radius:5px;word-break:break-all}
.cmd.failed{background:#8e1c1c}
pre{margin:0;background:#fff;border:1px solid #d5dbe5;border-radius:5px;padding:8px 10px;white-space:pre-wrap;word-break:break-word}
ul.state{list-style:none;margin:0;padding:0}
ul.state li{white-space:pre-wrap;font:12.5px/1.45 ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;background:#fff;border:1px solid #d5dbe5;border-radius:5px;padding:4px 8px;margin:0 0 4px}
ul.state li.changed{border-color:#e0b400;background:#fff8d6}
.time{color:#5a6578;font-size:12px;margin-left:6px}
.rule{background:#fff;border:1px solid #d5dbe5;border-radius:5px;padding:4px 8px;margin:0 0 4px}
.rule summary{cursor:pointer}
.rule code{font:12.5px ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-weight:bold;margin-right:6px}
.rule p{margin:6px 0 2px}
</style>
</head>
<body>
<header>
<h1>{{.File}}</h1><span class="prof">profile {{.Profile}}: {{.Summary}}</span>
<div class="controls" title="keys: ← → (or j k) step, Home End, + − zoom, 0 fit; click a step in the diagram">
<button id="prev" title="previous step (←)">◀ Previous</button>
<button id="next" title="next step (→)">Next ▶</button>
<label class="hint" for="jump">step</label><input id="jump" type="number" min="1" max="{{.N}}" value="1"><span class="hint">of {{.N}}</span>
<input id="slider" type="range" min="1" max="{{.N}}" value="1" aria-label="step">
<span class="zoom"><button id="zout" title="zoom out (-)">−</button><span class="hint" id="zoomval">100%</span><button id="zin" title="zoom in (+)">+</button><button id="zfit" title="fit the diagram to the width of its pane (0)">Fit</button></span>
</div>
</header>
<main>
<div id="diagram"><div id="heads">{{.Head}}</div>{{.SVG}}</div>
<div id="panel">
<h2 id="title"></h2>
<p class="narr" id="narr"></p>
<div class="cmd" id="cmd"></div>
<h3>What happened</h3>
<pre id="out"></pre>
<h3>State after the step <span class="hint">(changed ones highlighted)</span></h3>
<ul class="state" id="state"></ul>
<h3 id="rulesh">Rules <span class="hint">(click one cut short to read all of it)</span></h3>
<div id="rules"></div>
</div>
</main>
<script>
"use strict";
const steps = {{.Steps}};
let cur = 0;
const $ = (id) => document.getElementById(id);
function show(i) {
  if (i < 0 || i >= steps.length) return;
  const old = document.getElementById("step-" + (cur + 1));
  if (old) old.classList.remove("cur");
  cur = i;
  const s = steps[i];
  $("title").textContent = "Step " + s.n + " of " + steps.length;
  const t = document.createElement("span");
  t.className = "time";
  t.textContent = "virtual time " + s.time;
  $("title").appendChild(t);
  $("narr").textContent = s.narration;
  $("narr").style.display = s.narration ? "" : "none";
  $("cmd").textContent = "[" + s.n + "] " + s.command;
  $("cmd").className = s.failed ? "cmd failed" : "cmd";
  $("out").textContent = s.output || "(nothing to report)";
  const ul = $("state");
  ul.replaceChildren();
  const changed = new Set(s.changed || []);
  for (const line of s.state) {
    const li = document.createElement("li");
    li.textContent = line;
    if (changed.has(line)) li.className = "changed";
    ul.appendChild(li);
  }
  const rs = $("rules");
  rs.replaceChildren();
  for (const r of s.rules) {
    const id = document.createElement("code");
    id.textContent = r.id;
    const box = document.createElement(r.full ? "details" : "div");
    box.className = "rule";
    const head = r.full ? document.createElement("summary") : box;
    head.append(id, r.text);
    if (r.full) {
      const p = document.createElement("p");
      p.textContent = r.full;
      box.append(head, p);
    }
    rs.appendChild(box);
  }
  $("rulesh").style.display = s.rules.length ? "" : "none";
  $("jump").value = s.n;
  $("slider").value = s.n;
  $("prev").disabled = i === 0;
  $("next").disabled = i === steps.length - 1;
  const band = document.getElementById("step-" + s.n);
  if (band) {
    band.classList.add("cur");
    const box = $("diagram"), r = band.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (r.top < b.top + 60 || r.bottom > b.bottom) box.scrollTop += r.top - b.top - 90;
  }
  if (location.hash !== "#" + s.n) history.replaceState(null, "", "#" + s.n);
}
$("prev").addEventListener("click", () => show(cur - 1));
$("next").addEventListener("click", () => show(cur + 1));
$("jump").addEventListener("change", (e) => show(parseInt(e.target.value, 10) - 1));
$("slider").addEventListener("input", (e) => show(parseInt(e.target.value, 10) - 1));
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" && e.target.type === "number") return;
  if (e.key === "ArrowRight" || e.key === "ArrowDown" || e.key === "j") { show(cur + 1); e.preventDefault(); }
  else if (e.key === "ArrowLeft" || e.key === "ArrowUp" || e.key === "k") { show(cur - 1); e.preventDefault(); }
  else if (e.key === "Home") { show(0); e.preventDefault(); }
  else if (e.key === "End") { show(steps.length - 1); e.preventDefault(); }
});
for (const g of document.querySelectorAll("#diagram [data-step]")) {
  g.addEventListener("click", () => show(parseInt(g.dataset.step, 10) - 1));
}
// Zoom: both SVGs (the lane headings and the diagram) scale together; the
// page opens at 100% when the diagram fits its pane, else fitted to it.
const svgs = [...document.querySelectorAll("#diagram svg")].map((e) => ({e, w: +e.getAttribute("width"), h: +e.getAttribute("height")}));
const fullW = Math.max(...svgs.map((s) => s.w));
let zoom = 1;
function setZoom(z) {
  zoom = Math.min(2, Math.max(0.4, z));
  for (const s of svgs) { s.e.style.width = (s.w * zoom) + "px"; s.e.style.height = (s.h * zoom) + "px"; }
  $("zoomval").textContent = Math.round(zoom * 100) + "%";
}
const fit = () => Math.min(1, ($("diagram").clientWidth - 2) / fullW);
$("zin").addEventListener("click", () => setZoom(zoom + 0.1));
$("zout").addEventListener("click", () => setZoom(zoom - 0.1));
$("zfit").addEventListener("click", () => setZoom(fit()));
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT") return;
  if (e.key === "+" || e.key === "=") setZoom(zoom + 0.1);
  else if (e.key === "-") setZoom(zoom - 0.1);
  else if (e.key === "0") setZoom(fit());
});
setZoom(fit());
const start = parseInt(location.hash.slice(1), 10);
show(start >= 1 && start <= steps.length ? start - 1 : 0);
</script>
</body>
</html>
`))
