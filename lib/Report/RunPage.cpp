//===- RunPage.cpp - the training-run page's HTML -------------------------===//
//
// Small multiples over the step: the training loss, the validation loss,
// the learning rate, the throughput (tokens or examples a second) and the
// loss scale, each run a colour of its own, a panel only where some run has
// the metric. The pointer names each run's value at the step under it.
// What was drawn goes into #checks (JSON) for tests, script errors into
// #errors. The runs' labels are put into the document as text, never as
// markup.
//
//===----------------------------------------------------------------------===//

#include "tgc/Report/Pages.h"

namespace tgc::report {

static const char *kHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tgc training runs</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 8px; }
.legend span.item { margin-right: 16px; white-space: nowrap; }
.swatch { display: inline-block; width: 14px; height: 3px; margin: 0 6px 3px 0; }
.panels { display: flex; flex-wrap: wrap; }
.panel { margin: 8px 16px 8px 0; position: relative; }
.panel h3 { font-size: 14px; margin: 4px 0; }
svg text { font-size: 11px; fill: #444; }
.tip { position: absolute; pointer-events: none; background: #fff;
  border: 1px solid #999; padding: 4px 6px; font-size: 12px; display: none;
  white-space: nowrap; box-shadow: 0 1px 4px rgba(0,0,0,.2); }
#errors { color: #b00; white-space: pre-wrap; }
#checks { display: none; }
</style></head><body>
<div id="errors"></div>
<h1 id="title">tgc training runs</h1>
<div class="legend" id="legend"></div>
<div class="panels" id="panels"></div>
<pre id="checks"></pre>
<script>
window.onerror = function (message, source, line) {
  document.getElementById('errors').textContent +=
      'script error: ' + message + ' (line ' + line + ')\n';
};
</script>
<script id="data" type="application/json">)html";

static const char *kTail = R"html(</script>
<script>
(function () {
const runs = JSON.parse(document.getElementById('data').textContent);
const COLORS = ['#4e79a7', '#e15759', '#59a14f', '#f28e2b', '#b07aa1',
                '#76b7b2', '#edc948', '#9c755f'];
const color = r => COLORS[r % COLORS.length];
// Labels enter the document as text only.
function text(parent, tag, content) {
  const e = document.createElement(tag);
  e.textContent = content;
  parent.appendChild(e);
  return e;
}
function fmt(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(2) : +v.toPrecision(4) + '';
}
// The throughput's key names what a batch holds (tokens, examples).
function throughputKey(rows) {
  for (const row of rows)
    for (const k in row)
      if (k.endsWith('_per_s') && k !== 'real_tokens_per_s') return k;
  return null;
}
// A loss panel is drawn on a log scale where its values span more than
// 20x (a run converging towards 0 would otherwise show only its start).
const PANELS = [
  {title: 'training loss', key: () => 'loss', log: 'auto'},
  {title: 'validation loss', key: () => 'eval_loss', log: 'auto'},
  {title: 'learning rate', key: () => 'lr'},
  {title: 'throughput (a second)', key: throughputKey},
  {title: 'loss scale', key: () => 'loss_scale', log: true},
];
document.getElementById('title').textContent = runs.length === 1 ?
    'Training run: ' + runs[0].label : runs.length + ' training runs';
const legend = document.getElementById('legend');
runs.forEach((run, r) => {
  const item = text(legend, 'span', '');
  item.className = 'item';
  const swatch = text(item, 'span', '');
  swatch.className = 'swatch';
  swatch.style.background = color(r);
  item.appendChild(document.createTextNode(run.label + ' (' + run.rows.length + ' steps)'));
});
const checks = {status: 'drawn', runs: runs.length, panels: {}};
const NS = 'http://www.w3.org/2000/svg';
const W = 520, H = 260, L = 64, R = 12, T = 10, B = 30;
for (const panel of PANELS) {
  // Each run's points: (step, value) where the value is a finite number.
  const series = runs.map(run => {
    const key = panel.key(run.rows);
    return key ? run.rows.filter(row => typeof row[key] === 'number' &&
        isFinite(row[key]) && (panel.log !== true || row[key] > 0))
        .map(row => [row.step, row[key]]) : [];
  });
  const all = [].concat(...series);
  if (!all.length) continue;
  const lo = Math.min(...all.map(p => p[1])), hi = Math.max(...all.map(p => p[1]));
  const log = panel.log === true || (panel.log === 'auto' && lo > 0 && hi / lo > 20);
  const f = v => log ? Math.log10(v) : v;
  let x0 = Math.min(...all.map(p => p[0])), x1 = Math.max(...all.map(p => p[0]));
  let y0 = Math.min(...all.map(p => f(p[1]))), y1 = Math.max(...all.map(p => f(p[1])));
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
  const pad = (y1 - y0) * 0.05;
  y0 = !log && lo >= 0 ? Math.max(0, y0 - pad) : y0 - pad;
  y1 += pad;
  const x = s => L + (s - x0) / (x1 - x0) * (W - L - R);
  const y = v => H - B - (f(v) - y0) / (y1 - y0) * (H - T - B);
  const div = document.createElement('div');
  div.className = 'panel';
  text(div, 'h3', panel.title + (log ? ' (log scale)' : ''));
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  for (let g = 0; g <= 4; ++g) {
    const t = y0 + (y1 - y0) * g / 4, v = log ? Math.pow(10, t) : t;
    const py = H - B - g / 4 * (H - T - B);
    add('line', {x1: L, x2: W - R, y1: py, y2: py, stroke: '#eee'});
    add('text', {x: L - 6, y: py + 4, 'text-anchor': 'end'}, fmt(v));
  }
  add('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#999'});
  add('text', {x: L, y: H - 10}, 'step ' + x0);
  add('text', {x: W - R, y: H - 10, 'text-anchor': 'end'}, 'step ' + x1);
  series.forEach((points, r) => {
    if (!points.length) return;
    const d = points.map((p, i) => (i ? 'L' : 'M') + x(p[0]).toFixed(2) + ',' +
                                   y(p[1]).toFixed(2)).join('');
    add('path', {d, fill: 'none', stroke: color(r), 'stroke-width': 1.5,
                 'stroke-opacity': 0.8, 'data-run': r});
    if (points.length === 1)
      add('circle', {cx: x(points[0][0]), cy: y(points[0][1]), r: 3, fill: color(r)});
  });
  const tip = document.createElement('div');
  tip.className = 'tip';
  svg.addEventListener('mousemove', ev => {
    const box = svg.getBoundingClientRect();
    const step = x0 + (ev.clientX - box.left - L) / (W - L - R) * (x1 - x0);
    tip.replaceChildren();
    series.forEach((points, r) => {
      if (!points.length) return;
      let best = points[0];
      for (const p of points) if (Math.abs(p[0] - step) < Math.abs(best[0] - step)) best = p;
      text(tip, 'span', runs[r].label).style.color = color(r);
      tip.appendChild(document.createTextNode(': step ' + best[0] + ', ' + fmt(best[1])));
      tip.appendChild(document.createElement('br'));
    });
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX - box.left + 12, W - 200) + 'px';
    tip.style.top = (ev.clientY - box.top + 30) + 'px';
  });
  svg.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  div.appendChild(svg);
  div.appendChild(tip);
  document.getElementById('panels').appendChild(div);
  checks.panels[panel.title] = series.map(points => ({
    points: points.length,
    last: points.length ? points[points.length - 1] : null}));
}
document.getElementById('checks').textContent = JSON.stringify(checks);
})();
</script></body></html>
)html";

std::string runPage(llvm::json::Value runs) {
  return std::string(kHead) + scriptJSON(runs) + kTail;
}

} // namespace tgc::report
