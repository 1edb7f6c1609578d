//===- PlanPage.cpp - the memory timeline page's HTML ---------------------===//
//
// The page computes nothing the plan does not: each op's live bytes by kind
// come from the report's timeline, the persistent region's from its tensor
// list. It draws them as stacked areas over the op sequence (SVG), marks
// the peak and the recomputed ops, names the op and its bytes under the
// pointer, lists the tensors live at the peak and the peak's breakdown,
// and with a second report draws that one's total on the same axes. What
// it drew is written into #checks (JSON) for tests, and script errors into
// #errors. Names from the report (ops, kinds, the label) are put into the
// document as text, never as markup.
//
//===----------------------------------------------------------------------===//

#include "tgc/Report/Pages.h"

namespace tgc::report {

static const char *kHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tgc memory plan</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
.sub { color: #666; margin-bottom: 12px; }
#chart { position: relative; }
svg text { font-size: 11px; fill: #444; }
#tip { position: absolute; pointer-events: none; background: #fff;
  border: 1px solid #999; padding: 6px 8px; font-size: 12px;
  box-shadow: 0 1px 4px rgba(0,0,0,.2); display: none; white-space: nowrap; }
table { border-collapse: collapse; margin: 8px 24px 16px 0; }
td, th { border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
.legend span.item { margin-right: 14px; white-space: nowrap; }
.tables { display: flex; flex-wrap: wrap; align-items: flex-start; }
#errors { color: #b00; white-space: pre-wrap; }
#checks { display: none; }
</style></head><body>
<div id="errors"></div>
<h1 id="title">tgc memory plan</h1>
<div class="sub" id="subtitle"></div>
<div class="legend" id="legend"></div>
<div id="chart"><svg id="svg" width="1100" height="440"></svg><div id="tip"></div></div>
<div class="tables"><div><h3>At the peak</h3><table id="breakdown"></table></div>
<div><h3>Largest tensors live at the peak</h3><table id="live"></table></div></div>
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
const reports = JSON.parse(document.getElementById('data').textContent);
const COLORS = {
  params: '#4e79a7', frozen_params: '#a0cbe8', optimizer_state: '#f28e2b',
  grad_accumulators: '#ffbe7d', inputs: '#8cd17d', host_activations: '#b6992d',
  'alignment padding': '#d7d7d7', activations: '#e15759', grads: '#76b7b2',
  workspace: '#b07aa1', saved_for_backward: '#ff9da7'
};
const EXTRA = ['#59a14f', '#edc948', '#9c755f', '#bab0ac', '#86bcb6'];
function color(name, i) {
  return Object.prototype.hasOwnProperty.call(COLORS, name) ? COLORS[name]
                                                             : EXTRA[i % EXTRA.length];
}
function gib(bytes) {
  if (bytes >= 1 << 30) return (bytes / (1 << 30)).toFixed(2) + ' GiB';
  if (bytes >= 1 << 20) return (bytes / (1 << 20)).toFixed(2) + ' MiB';
  if (bytes >= 1 << 10) return (bytes / (1 << 10)).toFixed(2) + ' KiB';
  return bytes + ' B';
}
// The report's values enter the document as text only.
function text(parent, tag, content) {
  const e = document.createElement(tag);
  e.textContent = content;
  parent.appendChild(e);
  return e;
}
function addRow(table, cells, tag) {
  const row = table.insertRow();
  for (const cell of cells) text(row, tag || 'td', cell);
  return row;
}

// Categories and their bytes at every op: the persistent region's device
// part by kind (constant over the step; the padding between its tensors
// apart), then the arena's live bytes by kind from the timeline.
function series(report) {
  const persistent = Object.create(null);
  let listed = 0;
  for (const t of report.persistent) {
    if (t.host) continue;
    persistent[t.kind] = (persistent[t.kind] || 0) + t.bytes;
    listed += t.bytes;
  }
  const cats = Object.keys(persistent), fixed = cats.map(k => persistent[k]);
  const padding = report.persistent_bytes - report.host_bytes - listed;
  if (padding > 0) { cats.push('alignment padding'); fixed.push(padding); }
  const arenaKinds = report.timeline.kinds;
  const rows = report.timeline.bytes.map(r => fixed.concat(r));
  const totals = rows.map(r => r.reduce((a, b) => a + b, 0));
  let peak = 0;
  for (let i = 1; i < totals.length; ++i) if (totals[i] > totals[peak]) peak = i;
  return {cats: cats.concat(arenaKinds), rows, totals, peak,
          persistentCount: fixed.length};
}

const A = reports[0], B = reports.length > 1 ? reports[1] : null;
const sa = series(A), sb = B ? series(B) : null;
document.getElementById('title').textContent =
    'Memory plan of @' + A.function + (B ? ' against ' + B.label : '');
document.getElementById('subtitle').textContent =
    A.label + ': ' + A.ops + ' ops, peak ' + gib(sa.totals[sa.peak]) +
    ' at #' + A.peak.op_index + ' ' + A.op_names[A.peak.op_index] +
    ' (persistent ' + gib(A.persistent_bytes - A.host_bytes) +
    (A.host_bytes ? ', ' + gib(A.host_bytes) + ' in host memory' : '') +
    ', arena ' + gib(A.arena_bytes) + ')' +
    (B ? '; ' + B.label + ': ' + B.ops + ' ops, peak ' +
         gib(sb.totals[sb.peak]) : '');

// The chart.
const svg = document.getElementById('svg');
const W = 1100, H = 440, L = 70, R = 10, T = 10, BOT = 40;
const n = A.ops, yMax = Math.max(sa.totals[sa.peak], sb ? sb.totals[sb.peak] : 0) * 1.05 || 1;
const x = i => L + (n > 1 ? i / (n - 1) : 0.5) * (W - L - R);
const y = v => H - BOT - v / yMax * (H - T - BOT);
const NS = 'http://www.w3.org/2000/svg';
function add(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  svg.appendChild(e);
  return e;
}
for (let g = 0; g <= 4; ++g) {
  const v = yMax / 1.05 * g / 4;
  add('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#eee'});
  add('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end'}, gib(Math.round(v)));
}
// Stacked areas, bottom to top in category order.
const below = new Array(n).fill(0);
const legend = document.getElementById('legend');
function legendItem(swatch, label) {
  const item = document.createElement('span');
  item.className = 'item';
  if (swatch) {
    const box = text(item, 'span', '');
    box.className = 'swatch';
    box.style.background = swatch;
  }
  item.appendChild(document.createTextNode(label));
  legend.appendChild(item);
}
sa.cats.forEach((cat, c) => {
  const top = below.map((b, i) => b + sa.rows[i][c]);
  if (top.every((t, i) => t === below[i])) return; // nothing of this kind
  let d = 'M' + x(0) + ',' + y(top[0]);
  for (let i = 1; i < n; ++i) d += 'L' + x(i) + ',' + y(top[i]);
  for (let i = n - 1; i >= 0; --i) d += 'L' + x(i) + ',' + y(below[i]);
  add('path', {d: d + 'Z', fill: color(cat, c), stroke: 'none',
               'data-category': cat});
  for (let i = 0; i < n; ++i) below[i] = top[i];
  legendItem(color(cat, c), cat + (c < sa.persistentCount ? ' (persistent)' : ''));
});
// The other plan's total on the same axes, its ops spread over the width.
if (sb) {
  const m = sb.totals.length;
  let d = '';
  for (let i = 0; i < m; ++i)
    d += (i ? 'L' : 'M') + (L + (m > 1 ? i / (m - 1) : 0.5) * (W - L - R)) + ',' + y(sb.totals[i]);
  add('path', {d, fill: 'none', stroke: '#222', 'stroke-width': 1.5,
               'stroke-dasharray': '5,3', id: 'compare'});
  legendItem(null, '- - ' + B.label + ', total (its ' + B.ops + ' ops over the same width)');
}
// Recomputed ops, and the peak.
for (const op of A.remat.ops)
  add('line', {x1: x(op.op_index), x2: x(op.op_index), y1: H - BOT, y2: H - BOT + 6,
               stroke: '#c00', 'class': 'recomputed'});
if (A.remat.ops.length)
  legendItem('#c00', 'recomputed op (' + A.remat.ops.length + ')');
const p = A.peak.op_index;
add('line', {x1: x(p), x2: x(p), y1: T, y2: H - BOT, stroke: '#000', 'stroke-dasharray': '2,2', id: 'peak'});
add('text', {x: Math.min(x(p) + 4, W - 200), y: T + 12},
    'peak ' + gib(sa.totals[p]) + ' at #' + p);
add('line', {x1: L, x2: W - R, y1: H - BOT, y2: H - BOT, stroke: '#999'});
add('text', {x: L, y: H - 12}, 'op 0');
add('text', {x: W - R, y: H - 12, 'text-anchor': 'end'}, 'op ' + (n - 1));
add('text', {x: (L + W) / 2, y: H - 12, 'text-anchor': 'middle'}, 'ops in schedule order (forward, backward, update)');

// Hover: the op under the pointer, its bytes by category.
const tip = document.getElementById('tip'), cursor = add('line', {y1: T, y2: H - BOT, stroke: '#555', visibility: 'hidden'});
svg.addEventListener('mousemove', ev => {
  const box = svg.getBoundingClientRect();
  const i = Math.max(0, Math.min(n - 1, Math.round((ev.clientX - box.left - L) / (W - L - R) * (n - 1))));
  cursor.setAttribute('x1', x(i)); cursor.setAttribute('x2', x(i));
  cursor.setAttribute('visibility', 'visible');
  tip.replaceChildren();
  const line = (content, bold) => {
    text(tip, bold ? 'b' : 'span', content);
    tip.appendChild(document.createElement('br'));
  };
  line('#' + i + ' ' + A.op_names[i], true);
  sa.cats.forEach((cat, c) => { if (sa.rows[i][c]) line(cat + ': ' + gib(sa.rows[i][c])); });
  line('total ' + gib(sa.totals[i]), true);
  // The largest arena tensors live while the op runs.
  const here = A.buffers.filter(b => b.start <= i && i <= b.end)
      .sort((a, b) => b.bytes - a.bytes).slice(0, 5);
  if (here.length) line('largest live:');
  for (const b of here)
    line('\u00a0\u00a0' + gib(b.bytes) + ' from #' + b.op_index + ' ' + b.op);
  tip.style.display = 'block';
  tip.style.left = Math.min(ev.clientX - box.left + 12, W - 260) + 'px';
  tip.style.top = (ev.clientY - box.top + 12) + 'px';
});
svg.addEventListener('mouseleave', () => { tip.style.display = 'none'; cursor.setAttribute('visibility', 'hidden'); });

// The peak's breakdown (the report's), and the tensors live there.
const breakdown = document.getElementById('breakdown');
addRow(breakdown, ['category', 'bytes'], 'th');
for (const [category, bytes] of Object.entries(A.peak.breakdown))
  if (bytes) addRow(breakdown, [category, gib(bytes)]);
addRow(breakdown, ['total', gib(sa.totals[p])]).style.fontWeight = 'bold';
const live = A.buffers.filter(b => b.start <= p && p <= b.end)
    .sort((a, b) => b.bytes - a.bytes).slice(0, 15);
const liveTable = document.getElementById('live');
addRow(liveTable, ['made by', 'kind', 'bytes', 'live'], 'th');
for (const b of live)
  addRow(liveTable, ['#' + b.op_index + ' ' + b.op, b.kind, gib(b.bytes),
                     '#' + b.start + '..#' + b.end]);

// What was drawn, for tests.
const samples = [0, Math.floor(n / 4), Math.floor(n / 2), Math.floor(3 * n / 4), n - 1, p];
document.getElementById('checks').textContent = JSON.stringify({
  status: 'drawn', ops: n, drawn_peak_op: sa.peak, report_peak_op: p,
  areas: svg.querySelectorAll('path[data-category]').length,
  compare: !!sb, recomputed_marks: svg.querySelectorAll('.recomputed').length,
  samples: samples.map(i => ({op: i, total: sa.totals[i],
      by_category: Object.fromEntries(sa.cats.map((c, k) => [c, sa.rows[i][k]]))}))
});
})();
</script></body></html>
)html";

std::string scriptJSON(const llvm::json::Value &data) {
  std::string json;
  llvm::raw_string_ostream(json) << data;
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '<')
      safe += "\\u003c";
    else if (c == '>')
      safe += "\\u003e";
    else if (c == '&')
      safe += "\\u0026";
    // U+2028 and U+2029 (E2 80 A8/A9 in UTF-8): line ends to JavaScript.
    else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
             (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      safe += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else
      safe += c;
  }
  return safe;
}

std::string planPage(llvm::json::Value reports) {
  return std::string(kHead) + scriptJSON(reports) + kTail;
}

} // namespace tgc::report
