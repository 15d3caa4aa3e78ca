// Clean SVG charts of the audit endpoint's answers: the latency per tool (its 50th
// and 95th percentiles, computed by the server) and a run's calls on a timeline.

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Round tick steps (1, 2, 5 × 10^n) covering `max` in about `count` steps. */
function ticks(max, count = 5) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let value = 0; value <= max + step / 2; value += step) out.push(Number(value.toPrecision(6)));
  if (out[out.length - 1] < max) out.push(out[out.length - 1] + step);
  return out;
}

const ms = (micros) => micros / 1000;

function xAxis(root, { left, width, top, scale, values, label }) {
  root.append(svg("line", { class: "axis", x1: left, x2: left + width, y1: top, y2: top }));
  for (const value of values) {
    const x = left + scale(value);
    root.append(svg("line", { class: "grid", x1: x, x2: x, y1: 10, y2: top }));
    root.append(svg("text", { x, y: top + 14, "text-anchor": "middle" }, String(value)));
  }
  root.append(svg("text", { x: left + width / 2, y: top + 32, "text-anchor": "middle" }, label));
}

/**
 * The latency chart: one row per tool, a bar to its p50 and a thinner bar to its
 * p95, in milliseconds. `rows` is the audit answer's `latency`.
 */
export function latencyChart(rows) {
  const figure = document.createElement("figure");
  figure.setAttribute("data-testid", "latency-chart");
  if (rows.length === 0) {
    figure.append(Object.assign(document.createElement("p"), { className: "muted", textContent: "No call ran yet." }));
    return figure;
  }
  const left = 150;
  const width = 520;
  const rowHeight = 26;
  const top = 10 + rows.length * rowHeight;
  const max = Math.max(...rows.map((row) => ms(row.p95_micros)), 0.001);
  const values = ticks(max);
  const scale = (value) => (value / values[values.length - 1]) * width;
  const root = svg("svg", {
    viewBox: `0 0 ${left + width + 20} ${top + 42}`,
    role: "img",
    "aria-label": "Run time per tool in milliseconds: 50th and 95th percentiles",
  });
  rows.forEach((row, i) => {
    const y = 10 + i * rowHeight;
    root.append(svg("text", { x: left - 8, y: y + 15, "text-anchor": "end" }, `${row.tool} (${row.count})`));
    root.append(svg("rect", { class: "p95", x: left, y: y + 12, height: 6, width: Math.max(1, scale(ms(row.p95_micros))) }));
    const p50 = svg("rect", { class: "p50", x: left, y: y + 4, height: 8, width: Math.max(1, scale(ms(row.p50_micros))) });
    p50.append(svg("title", {}, `${row.tool}: p50 ${ms(row.p50_micros)} ms, p95 ${ms(row.p95_micros)} ms over ${row.count} calls`));
    root.append(p50);
  });
  xAxis(root, { left, width, top, scale, values, label: "run time (ms)" });
  const legend = document.createElement("figcaption");
  legend.className = "legend";
  for (const [kind, text] of [["p50", "50th percentile"], ["p95", "95th percentile"]]) {
    const item = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = `swatch ${kind}`;
    item.append(swatch, text);
    legend.append(item);
  }
  figure.append(root, legend);
  return figure;
}

/**
 * The timeline: each call a bar from its start to its end (the record's time is
 * its end; its start is that minus its run time), overlapping calls on separate
 * lanes so parallel reads sit side by side. `calls` is the audit answer's `calls`.
 */
export function timelineChart(calls) {
  const figure = document.createElement("figure");
  figure.setAttribute("data-testid", "timeline-chart");
  const spans = calls
    .map((call) => {
      const end = Date.parse(call.time);
      return { call, end, start: end - ms(call.took_micros) };
    })
    .filter((span) => Number.isFinite(span.end) && span.end > 0);
  if (spans.length === 0) {
    figure.append(Object.assign(document.createElement("p"), { className: "muted", textContent: "No timed call yet." }));
    return figure;
  }
  spans.sort((a, b) => a.start - b.start);
  const origin = spans[0].start;
  const lanes = [];
  for (const span of spans) {
    let lane = lanes.findIndex((end) => end <= span.start);
    if (lane < 0) lane = lanes.push(0) - 1;
    lanes[lane] = span.end;
    span.lane = lane;
  }
  const left = 20;
  const width = 650;
  const laneHeight = 22;
  const top = 10 + lanes.length * laneHeight;
  const max = Math.max(...spans.map((span) => span.end - origin), 0.001);
  const values = ticks(max);
  const scale = (value) => (value / values[values.length - 1]) * width;
  const root = svg("svg", {
    viewBox: `0 0 ${left + width + 20} ${top + 42}`,
    role: "img",
    "aria-label": "Tool calls over time in milliseconds since the first call",
  });
  for (const span of spans) {
    const x = left + scale(span.start - origin);
    const y = 10 + span.lane * laneHeight;
    const bar = svg("rect", {
      class: span.call.is_error ? "call error" : "call",
      x,
      y,
      height: laneHeight - 6,
      width: Math.max(2, scale(span.end - span.start)),
      rx: 2,
    });
    bar.append(svg("title", {}, `${span.call.tool}: ${ms(span.call.took_micros)} ms`));
    root.append(bar);
    const barWidth = Math.max(2, scale(span.end - span.start));
    const inside = barWidth > 80;
    const label = svg("text", { x: inside ? x + 4 : x + barWidth + 4, y: y + 12, class: inside ? "on-bar" : "" }, span.call.tool);
    root.append(label);
  }
  xAxis(root, { left, width, top, scale, values, label: "time since the first call (ms)" });
  figure.append(root);
  return figure;
}
