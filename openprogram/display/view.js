// The DAG view's script: builds the call tree of one view from its embedded JSON payload.
// Inlined by openprogram/display/_script.py into every notebook view and report, with
// %ID% replaced by the view's element id. Rows are built when a frame opens (200 at a
// time), an llm node's panels when it opens. What was hidden from a call, and why, comes
// computed in the payload (openprogram/display/_hiding.py): this script only draws it.
// `#n=NODE_ID&t=hid|diff` opens a node, `#n=NODE_ID&i=SHA256` one of its images in the
// lightbox.
(function (id) {
"use strict";
const root = document.getElementById(id);
if (!root || root.dataset.ready) return;
root.dataset.ready = "1";
const D = JSON.parse(document.getElementById(id + "-data").textContent);
const KIND = {c: "code", l: "llm", u: "user"};
const ST = {c: "completed", e: "error", r: "running", x: "cancelled", s: "stopped", w: "waiting", u: "unknown"};
const EX = {i: "io", l: "llm", f: "full", h: "hidden"};
const CHUNK = 200, MAXROWS = 3000;
const EXPLAIN = {
  l: "expose='llm': callers see only its llm exchanges",
  f: "expose='full': callers see everything inside it",
  h: "expose='hidden': callers see nothing of it",
};

// -- the node table ------------------------------------------------------------------------
const N = D.nodes.map((r, i) => ({
  i: i, id: r[0], kind: r[1], name: D.names[r[2]], parent: r[3], st: r[4], seq: r[5],
  end: r[6], t0: r[7], dur: r[8], u: r[9] || null, ex: r[10], inp: r[11], out: r[12],
  img: r[13] || [], renc: r[14], x: r[15] || {}, hid: r[16], kids: [], k: 0, roll: null,
  rd: null,
}));
const byId = {}, counts = {}, tops = [];
for (const n of N) {
  byId[n.id] = n.i;
  const key = n.kind + "\u0000" + n.name;
  n.k = counts[key] = (counts[key] || 0) + 1;
  if (n.parent >= 0) N[n.parent].kids.push(n.i); else tops.push(n.i);
}
const blank = () => ({calls: 0, tin: 0, tout: 0, cost: 0, err: 0, size: 1});
for (let i = N.length - 1; i >= 0; i--) {  // children come after parents: one pass rolls up
  const n = N[i], r = n.roll || (n.roll = blank());
  if (n.u) { r.calls++; r.tin += n.u[0]; r.tout += n.u[1]; r.cost += n.u[2]; }
  if (n.st === "e") r.err++;
  if (n.parent >= 0) {
    const p = N[n.parent], q = p.roll || (p.roll = blank());
    q.calls += r.calls; q.tin += r.tin; q.tout += r.tout; q.cost += r.cost;
    q.err += r.err; q.size += r.size;
  }
}

// -- formatting ----------------------------------------------------------------------------
const esc = s => String(s).replace(/[&<>"]/g,
  c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]);
function dur(ms) {
  if (ms < 0) return "";
  if (ms < 1000) return (ms < 10 ? ms.toFixed(1) : Math.round(ms)) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
  return Math.floor(ms / 60000) + " m " + Math.round(ms % 60000 / 1000) + " s";
}
const tok = t => t < 1000 ? String(t) : t < 1e6 ? (t / 1000).toFixed(1) + "k"
  : (t / 1e6).toFixed(2) + "M";
const usd = (c, known) => "$" + (c === 0 ? "0" : c < 0.01 ? c.toFixed(4) : c.toFixed(2))
  + (known === false ? "?" : "");
const label = n => n.name + " #" + n.k + (n.kind === "l" ? " (llm)" : "");
const plural = (count, word) => count + " " + word + (count === 1 ? "" : "s");
const pre = (s, cls) => `<pre${cls ? ` class="${cls}"` : ""}>${esc(s)}</pre>`;
function inView(i) {
  if (D.focus < 0) return true;
  for (let j = i; j >= 0; j = N[j].parent) if (j === D.focus) return true;
  return false;
}

// reads are stored as [base, removed, added] against an earlier call's reads
function reads(n) {
  if (n.rd) return n.rd;
  const e = n.renc;
  if (!e) return (n.rd = []);
  if (e[0] < 0) return (n.rd = e[2]);
  const chain = [];
  let c = n;
  while (c && !c.rd && c.renc && c.renc[0] >= 0) { chain.push(c); c = N[c.renc[0]]; }
  if (c && !c.rd) reads(c);
  for (let j = chain.length - 1; j >= 0; j--) {
    const m = chain[j], removed = new Set(m.renc[1]);
    m.rd = N[m.renc[0]].rd.filter(x => !removed.has(x)).concat(m.renc[2]).sort((a, b) => a - b);
  }
  return n.rd;
}

// -- rows ----------------------------------------------------------------------------------
function preview(n) {
  let s;
  if (n.kind === "c") {
    s = n.inp + (n.st === "c" ? " → " + n.out
      : n.st === "e" ? " ✗ " + (n.x.err || "") : n.st === "s" ? " ■ " + (n.x.stop || "")
      : n.st === "w" ? " ⏸ waiting" + (n.x.ask ? ": " + n.x.ask[0] : "")
      : n.st === "u" ? " ? unknown: settle it" : "");
  } else {
    s = n.kind === "l" ? n.out || n.x.err || "" : n.inp;
  }
  s = s.replace(/\s+/g, " ");
  return s.length > 160 ? s.slice(0, 160) + "…" : s;
}
function row(n) {
  let h = `<div class="opv-node" data-i="${n.i}"><div class="opv-row opv-s-${n.st}" data-a="det">`
    + `<span class="opv-caret" data-a="tog">${n.kids.length ? "▸" : ""}</span>`
    + `<span class="opv-dot" title="${ST[n.st]}"></span>`
    + `<span class="opv-name">${esc(n.name)} <span class="opv-k">#${n.k}</span></span>`;
  if (n.kind !== "c") h += `<span class="opv-tag opv-tag-${KIND[n.kind]}">${KIND[n.kind]}</span>`;
  if (n.x.tc) h += `<span class="opv-tag opv-tag-tool" title="answers ${esc(n.x.tc)}">tool</span>`;
  if (n.kind === "c" && n.ex !== "i") {
    h += `<span class="opv-tag opv-tag-x${n.ex}" title="${EXPLAIN[n.ex]}">${EX[n.ex]}</span>`;
  }
  if (n.st === "r") h += `<span class="opv-num">running</span>`;
  else if (n.dur >= 0 && n.kind !== "u") h += `<span class="opv-num">${dur(n.dur)}</span>`;
  if (n.u) {
    h += `<span class="opv-num">${tok(n.u[0])}→${tok(n.u[1])} tok ${usd(n.u[2], n.u[3])}</span>`;
  }
  const r = n.roll;
  if (n.kids.length && r.calls) {
    h += `<span class="opv-roll" title="inside: ${r.size - 1} nodes, ${r.calls} llm calls, `
      + `${r.tin} tokens in, ${r.tout} out">Σ ${r.calls} llm · ${tok(r.tin + r.tout)} tok · `
      + `${usd(r.cost)}</span>`;
  }
  if (r.err && n.st !== "e") h += `<span class="opv-err">${plural(r.err, "error")} inside</span>`;
  return h + `<span class="opv-prev">${esc(preview(n))}</span></div></div>`;
}
function fill(box, list, from) {
  const end = Math.min(list.length, from + CHUNK);
  let h = "";
  for (let j = from; j < end; j++) h += row(N[list[j]]);
  const old = box.querySelector(":scope>.opv-more");
  if (old) old.remove();
  box.insertAdjacentHTML("beforeend", h);
  if (end < list.length) {
    box.insertAdjacentHTML("beforeend", `<div class="opv-more"><button data-a="more" `
      + `data-from="${end}">show ${Math.min(CHUNK, list.length - end)} more of `
      + `${list.length - end}</button></div>`);
  }
}

const tree = document.createElement("div");
tree.className = "opv-tree";
const bar = document.createElement("div");
bar.className = "opv-bar";
bar.innerHTML = `<input type="search" placeholder="find: name, text, error or node id (Enter)">`
  + `<button data-a="errors">errors</button><button data-a="expand">expand all</button>`
  + `<button data-a="collapse">collapse</button><span class="opv-meta opv-found"></span>`;
const fallback = root.querySelector(".opv-static");
if (fallback) fallback.hidden = true;
root.appendChild(bar);
root.appendChild(tree);
const roots = D.focus >= 0 ? [D.focus] : tops;
tree.opvList = roots;
fill(tree, roots, 0);
const nodeDiv = i => root.querySelector(`.opv-node[data-i="${i}"]`);

function open(div, show) {
  const n = N[+div.dataset.i];
  if (!n.kids.length) return;
  let box = div.querySelector(":scope>.opv-kids");
  if (!box) {
    if (show === false) return;
    box = document.createElement("div");
    box.className = "opv-kids";
    box.opvList = n.kids;
    div.appendChild(box);
    fill(box, n.kids, 0);
  } else {
    box.hidden = show === undefined ? !box.hidden : !show;
  }
  div.querySelector(":scope>.opv-row>.opv-caret").textContent = box.hidden ? "▸" : "▾";
}
function reveal(i) {  // expand the path to node i (loading more rows as needed); its div
  if (!inView(i)) return null;
  const path = [];
  for (let j = i; j >= 0 && inView(j); j = N[j].parent) path.unshift(j);
  let box = tree;
  for (let p = 0; p < path.length; p++) {
    let div;
    while (!(div = box.querySelector(`:scope>.opv-node[data-i="${path[p]}"]`))) {
      const more = box.querySelector(":scope>.opv-more button");
      if (!more) return null;
      fill(box, box.opvList, +more.dataset.from);
    }
    if (p === path.length - 1) return div;
    open(div, true);
    box = div.querySelector(":scope>.opv-kids");
  }
  return null;
}

// -- details -------------------------------------------------------------------------------
function thumbs(list, omitted, owner) {
  if (!list.length) return "";
  const size = Math.max(16, D.tpx || 256);
  return `<div class="opv-thumbs">` + list.map(k => {
    const m = D.images[k], name = `sha256:${m[0]} ${m[1]}×${m[2]}`;
    if (omitted && omitted(m[0])) {
      return `<span class="opv-noimg">image omitted from this call (image retention)<br>`
        + `${name}</span>`;
    }
    if (!m[3]) return `<span class="opv-noimg">${name}<br>not embedded (image budget)</span>`;
    const width = Math.min(size, m[1] >= m[2] ? size : Math.round(size * m[1] / m[2]));
    return `<img src="${m[3]}" title="${name}: click for full size" alt="${name}" `
      + `data-a="zoom" data-k="${k}" data-o="${owner === undefined ? -1 : owner}" `
      + `style="width:${width}px">`;
  }).join("") + `</div>`;
}

// -- the lightbox: images at full resolution, zoom, and the other images of the step -------
function stepImages(owner, k) {  // [node, image] pairs inside the owner's caller, in seq order
  const found = [], seen = new Set();
  const add = j => {
    for (const x of N[j].img) {
      if (!seen.has(x)) { seen.add(x); found.push([j, x]); }
    }
  };
  const top = owner >= 0 && N[owner].parent >= 0 ? N[owner].parent : owner;
  if (top >= 0) {
    const stack = [top];
    while (stack.length) {
      const j = stack.pop();
      add(j);
      for (let c = N[j].kids.length - 1; c >= 0; c--) stack.push(N[j].kids[c]);
    }
  }
  found.sort((a, b) => N[a[0]].seq - N[b[0]].seq);
  if (!seen.has(k)) found.unshift([owner, k]);
  return found;
}
let lb = null;
function lightbox(owner, k) {
  if (!lb) {
    lb = document.createElement("div");
    lb.className = "opv-lb";
    lb.tabIndex = -1;
    root.appendChild(lb);
  }
  const list = stepImages(owner, k);
  lb.opvList = list;
  lb.opvAt = Math.max(0, list.findIndex(e => e[1] === k));
  lb.opvZoom = 0;  // 0: fit the window; else a factor of the full size
  lb.hidden = false;
  paint();
  lb.focus();
}
function paint() {
  const [j, k] = lb.opvList[lb.opvAt], m = D.images[k], n = j >= 0 ? N[j] : null;
  const what = !n ? "" : n.kind === "l" ? "what the model saw" : "recorded in this call";
  const src = m[4] || m[3], on = z => lb.opvZoom === z ? "opv-on" : "";
  const style = lb.opvZoom ? `width:${Math.round(m[1] * lb.opvZoom)}px;max-width:none`
    : "max-width:100%;max-height:calc(100vh - 90px)";
  lb.innerHTML = `<div class="opv-lb-bar">`
    + `<button data-a="lb-prev" ${lb.opvAt ? "" : "disabled"}>◀</button>`
    + `<span>${lb.opvAt + 1} / ${lb.opvList.length}</span>`
    + `<button data-a="lb-next" ${lb.opvAt < lb.opvList.length - 1 ? "" : "disabled"}>▶</button>`
    + `<b>${n ? esc(label(n)) : ""}</b><span class="opv-meta">${what} · sha256:${m[0]} `
    + `${m[1]}×${m[2]}${m[4] ? "" : " · full size not embedded (image budget): thumbnail shown"}`
    + `</span><span class="opv-lb-gap"></span>`
    + `<button data-a="lb-fit" class="${on(0)}">fit</button>`
    + `<button data-a="lb-zoom" data-z="1" class="${on(1)}">100%</button>`
    + `<button data-a="lb-zoom" data-z="2" class="${on(2)}">200%</button>`
    + `<button data-a="lb-close">close ✕</button></div>`
    + `<div class="opv-lb-body"><img src="${src}" alt="sha256:${m[0]}" data-a="lb-click" `
    + `style="${style}"></div>`;
}
function lightboxAction(action, t) {
  if (action === "lb-close") lb.hidden = true;
  else if (action === "lb-prev" && lb.opvAt > 0) { lb.opvAt--; paint(); }
  else if (action === "lb-next" && lb.opvAt < lb.opvList.length - 1) { lb.opvAt++; paint(); }
  else if (action === "lb-fit") { lb.opvZoom = 0; paint(); }
  else if (action === "lb-zoom") { lb.opvZoom = +t.dataset.z; paint(); }
  else if (action === "lb-click") { lb.opvZoom = lb.opvZoom ? 0 : 1; paint(); }
}
root.addEventListener("keydown", ev => {
  if (!lb || lb.hidden) return;
  if (ev.key === "Escape") lb.hidden = true;
  else if (ev.key === "ArrowLeft") lightboxAction("lb-prev");
  else if (ev.key === "ArrowRight") lightboxAction("lb-next");
  else return;
  ev.preventDefault();
});
function detail(n) {
  let h = `<div class="opv-meta">${KIND[n.kind]} node <code>${esc(n.id)}</code> · seq ${n.seq}`
    + ` · ${ST[n.st]}`;
  if (n.kind === "c") {
    h += ` · expose=${EX[n.ex]}`;
    if (n.x.rr) {
      h += ` · render_range callers=${n.x.rr[0] === null ? "all" : n.x.rr[0]}`
        + ` subcalls=${n.x.rr[1]}`;
    }
  }
  if (n.t0 >= 0) h += ` · started +${dur(n.t0)}`;
  if (n.dur >= 0) h += ` · took ${dur(n.dur)}`;
  if (n.x.br) h += ` · branch ${esc(n.x.br)}`;
  if (n.x.model) h += ` · model ${esc(n.x.model)}`;
  if (n.x.tc) h += ` · tool call <code>${esc(n.x.tc)}</code>`;
  if (n.x.eff) h += ` · effect ${esc(n.x.eff)}, key <code>${esc(n.x.key || "")}</code>`;
  h += `</div>`;
  if (n.st === "u") h += `<div class="opv-unk">unknown: it began and did not finish; look it `
    + `up by its key, then <code>openprogram sessions settle</code> it</div>`;
  if (n.x.set) h += `<div class="opv-unk">settled: ${n.x.set === "rerun" ? "to run again" `
    + `: "its effect happened"}</div>`;
  if (n.x.stop && n.st !== "w") h += `<div class="opv-warn">stopped: ${esc(n.x.stop)}</div>`;
  if (n.x.ask) {
    h += `<div class="opv-wait">${n.st === "w" ? "waiting for an answer" : "asked"}: `
      + `${esc(n.x.ask[0])} (answer: ${esc(n.x.ask[1])})</div>`;
  }
  if (n.kind === "l") return h + llmDetail(n);
  if (n.kind === "u") {
    h += `<div class="opv-label">text</div>` + pre(n.inp);
    return h + (n.x.iid ? `<div class="opv-meta">input_id ${esc(n.x.iid)}</div>` : "");
  }
  h += `<div class="opv-label">input</div>` + pre(n.inp);
  if (n.x.hid) {
    h += `<div class="opv-meta">hidden parameters (never rendered): ${esc(n.x.hid.join(", "))}`
      + `</div>`;
  }
  if (n.st === "c") h += `<div class="opv-label">output</div>` + pre(n.out);
  if (n.x.err) h += `<div class="opv-label">error</div>` + pre(n.x.err, "opv-err");
  const r = n.roll;
  if (n.kids.length) {
    h += `<div class="opv-meta">inside: ${plural(r.size - 1, "node")} · `
      + `${plural(r.calls, "llm call")} · ${r.tin} tokens in, ${r.tout} out · ${usd(r.cost)}`
      + `</div>`;
  }
  return h + thumbs(n.img, null, n.i);
}
function llmDetail(n) {
  let h = "";
  if (n.u) {
    h += `<div class="opv-meta">${n.u[0]} tokens in, ${n.u[1]} out · ${usd(n.u[2], n.u[3])}`
      + `${n.u[3] ? "" : " (price unknown)"}</div>`;
  }
  h += `<div class="opv-label">reply</div>`;
  h += n.out ? pre(n.out) : `<div class="opv-meta">no reply</div>`;
  if (n.x.err) h += pre(n.x.err, "opv-err");
  if (n.x.att) h += `<div class="opv-meta">attempts: ${esc(n.x.att.join(" | "))}</div>`;
  const prev = n.hid[0];
  h += `<div class="opv-tabs"><button data-a="tab" data-t="saw" class="opv-on">what it saw `
    + `(${plural(reads(n).length, "node")})</button>`
    + `<button data-a="tab" data-t="hid">hidden from it</button>`
    + (prev >= 0 ? `<button data-a="tab" data-t="diff">diff vs ${esc(label(N[prev]))}</button>`
      : "")
    + `</div><div class="opv-panel">${saw(n)}</div>`;
  return h;
}
function stackOf(n) {
  const s = new Set();
  for (let j = n.parent; j >= 0; j = N[j].parent) s.add(j);
  return s;
}
const done = (r, before) => r.st !== "r" && r.end >= 0 && r.end < before;
function line(r, n, stack) {  // the render's line format (render.RenderedContext.text)
  if (r.kind === "u") return "user: " + r.inp;
  if (r.kind === "l") return "assistant: " + r.out;
  let s = `[${r.name} #${r.k}] input=${r.inp}`;
  if (!stack.has(r.i) && done(r, n.seq)) {
    s += r.st === "c" ? " output=" + r.out : " error=" + (r.x.err || ST[r.st]);
  }
  return s;
}
function saw(n) {
  const stack = stackOf(n), turns = [];
  if (n.x.sys) turns.push(["system", [[-1, n.x.sys, []]]]);
  for (const j of reads(n)) {
    const r = N[j];
    if (r.kind === "l") {
      turns.push(["user", [[j, r.inp, r.img]]]);
      if (r.out) turns.push(["assistant", [[j, r.out, []]]]);
    } else {
      turns.push(["user", [[j, line(r, n, stack), []]]]);
    }
  }
  turns.push(["user", [[n.i, n.inp, n.img]]]);
  const messages = [];
  for (const t of turns) {
    const last = messages[messages.length - 1];
    if (last && last[0] === t[0] && t[0] !== "system") last[1].push(...t[1]);
    else messages.push([t[0], t[1].slice()]);
  }
  const report = n.x.rep || [], omitted = report.filter(e => e[0] === "omitted");
  let h = `<div class="opv-meta">${plural(messages.length, "message")}, rebuilt from the `
    + `${plural(reads(n).length, "node")} this call read`
    + (D.cap ? `; values longer than ${D.cap} characters are shortened in this view `
      + `(CallView(dag, node) in Python shows them whole)` : "") + `</div>`;
  for (const e of report) h += `<div class="opv-warn">${esc(e[0])}: ${esc(e[1])}</div>`;
  for (const m of messages) {
    h += `<div class="opv-msg opv-msg-${m[0]}"><div class="opv-role">${m[0]}</div>`;
    for (const p of m[1]) {
      if (p[0] >= 0) {
        h += `<span class="opv-from" data-a="go" data-i="${p[0]}">`
          + `${p[0] === n.i ? "this call's content" : esc(label(N[p[0]]))}</span>`;
      }
      const dropped = p[0] === n.i ? null
        : sha => omitted.some(e => e[2] === p[0] && e[1].includes(sha));
      h += pre(p[1]) + thumbs(p[2], dropped, p[0] >= 0 ? p[0] : n.i);
    }
    h += `</div>`;
  }
  return h;
}

// -- what was hidden, and why: computed in Python (display/_hiding.py), only drawn here ----
function hiddenOf(n) {  // row -> index into D.reasons for each row older than n; -1: not hidden
  const chain = [], map = new Int32Array(n.i).fill(-1);
  for (let c = n; c; c = c.hid[1] ? N[c.hid[0]] : null) chain.push(c);  // to a whole list
  for (let j = chain.length - 1; j >= 0; j--) {
    const gone = chain[j].hid[1] || [], runs = chain[j].hid[2];
    for (let k = 0; k < gone.length; k += 2) map.fill(-1, gone[k], gone[k] + gone[k + 1]);
    for (let k = 0; k < runs.length; k += 3) map.fill(runs[k + 2], runs[k], runs[k] + runs[k + 1]);
  }
  return map;
}
function why(k, name) {  // a reason's rule (calls by function name) or its text (by label)
  const reason = D.reasons[k], rule = D.rules[reason[1]], call = reason[2];
  return call < 0 ? rule : rule.replace("{call}", name ? N[call].name : label(N[call]));
}
const chip = (j, title) => `<span class="opv-chip" data-a="go" data-i="${j}"`
  + (title ? ` title="${esc(title)}"` : "") + `>${esc(label(N[j]))}</span>`;
function hidden(n) {
  const map = hiddenOf(n), groups = new Map();
  let total = 0;
  for (let j = 0; j < map.length; j++) {
    if (map[j] < 0) continue;
    const rule = why(map[j], true), frame = D.reasons[map[j]][2];
    if (!groups.has(rule)) groups.set(rule, {nodes: [], frames: [], named: new Set()});
    const group = groups.get(rule);
    group.nodes.push(j);
    if (frame >= 0 && !group.named.has(frame)) { group.named.add(frame); group.frames.push(frame); }
    total++;
  }
  if (!groups.size) {
    return `<div class="opv-meta">nothing: this call read every node that existed before it</div>`;
  }
  let h = `<div class="opv-meta">${plural(total, "earlier node")} not in this call's context, `
    + `by rule:</div>`;
  groups.forEach((group, rule) => {
    const shown = group.frames.length ? group.frames : group.nodes;
    const count = plural(group.nodes.length, "node")
      + (group.frames.length ? " in " + plural(group.frames.length, "call") : "");
    h += `<div class="opv-group"><b>${esc(rule)}</b> <span class="opv-meta">(${count})`
      + `</span> ` + shown.slice(0, 12).map(j => chip(j)).join("")
      + (shown.length > 12 ? ` <span class="opv-meta">and ${shown.length - 12} more</span>` : "")
      + `<details class="opv-all"><summary data-a="all" data-r="${esc(rule)}">each node and why`
      + `</summary></details></div>`;
  });
  return h;
}
function hiddenList(n, rule) {  // every node of one rule, the exact reason on each
  const map = hiddenOf(n), chips = [];
  for (let j = 0; j < map.length; j++) {
    if (map[j] >= 0 && why(map[j], true) === rule) chips.push(chip(j, why(map[j], false)));
  }
  return chips.join("");
}

// -- diff against the previous call of the same function -----------------------------------
function sawLines(n) {
  const stack = stackOf(n);
  const lines = [];
  for (const j of reads(n)) lines.push(...line(N[j], n, stack).split("\n"));
  lines.push("content:");
  for (const l of n.inp.split("\n")) lines.push("  " + l);
  return lines;
}
function diffOps(a, b) {  // longest common subsequence; a set difference when too large
  const m = a.length, k = b.length, ops = [];
  if (m * k > 4e6) {
    const inA = new Set(a), inB = new Set(b);
    for (const s of a) ops.push([inB.has(s) ? " " : "-", s]);
    for (const s of b) if (!inA.has(s)) ops.push(["+", s]);
    return ops;
  }
  const w = k + 1, L = new Uint32Array((m + 1) * w);
  for (let x = m - 1; x >= 0; x--) {
    for (let y = k - 1; y >= 0; y--) {
      L[x * w + y] = a[x] === b[y] ? L[(x + 1) * w + y + 1] + 1
        : Math.max(L[(x + 1) * w + y], L[x * w + y + 1]);
    }
  }
  let x = 0, y = 0;
  while (x < m && y < k) {
    if (a[x] === b[y]) { ops.push([" ", a[x]]); x++; y++; }
    else if (L[(x + 1) * w + y] >= L[x * w + y + 1]) ops.push(["-", a[x++]]);
    else ops.push(["+", b[y++]]);
  }
  while (x < m) ops.push(["-", a[x++]]);
  while (y < k) ops.push(["+", b[y++]]);
  return ops;
}
function diff(n) {
  const p = N[n.hid[0]], ops = diffOps(sawLines(p), sawLines(n));
  const changed = ops.filter(o => o[0] !== " ").length;
  let h = `<div class="opv-meta">compared with ${esc(label(p))}: ${plural(changed, "changed line")}`
    + `</div><div class="opv-diff">`;
  let same = [];
  const flush = () => {
    if (same.length > 3) {
      h += `<div class="opv-same">  ${esc(same[0][1])}</div>`
        + `<div class="opv-same">⋯ ${same.length - 2} unchanged lines</div>`
        + `<div class="opv-same">  ${esc(same[same.length - 1][1])}</div>`;
    } else {
      for (const o of same) h += `<div class="opv-same">  ${esc(o[1])}</div>`;
    }
    same = [];
  };
  for (const o of ops) {
    if (o[0] === " ") { same.push(o); continue; }
    flush();
    h += `<div class="${o[0] === "+" ? "opv-add" : "opv-del"}">${o[0]} ${esc(o[1])}</div>`;
  }
  flush();
  return h + `</div>`;
}

// -- interaction ---------------------------------------------------------------------------
function toggleDetail(div, show) {
  const n = N[+div.dataset.i], rowEl = div.firstChild;
  let box = div.querySelector(":scope>.opv-detail");
  if (box) {
    box.hidden = show === undefined ? !box.hidden : !show;
    rowEl.classList.toggle("opv-open", !box.hidden);
    return;
  }
  if (show === false) return;
  box = document.createElement("div");
  box.className = "opv-detail";
  box.innerHTML = detail(n);
  rowEl.after(box);
  rowEl.classList.add("opv-open");
}
function go(i) {
  const div = reveal(i);
  if (!div) return;
  toggleDetail(div, true);
  div.firstChild.classList.add("opv-hit");
  div.firstChild.scrollIntoView({block: "center"});
}
const found = bar.querySelector(".opv-found");
function mark(list, what) {
  tree.querySelectorAll(".opv-hit").forEach(e => e.classList.remove("opv-hit"));
  for (const i of list.slice(0, 50)) {
    const div = reveal(i);
    if (div) div.firstChild.classList.add("opv-hit");
  }
  found.textContent = !list.length ? `no ${what}`
    : `${list.length} ${what}${list.length > 50 ? " (first 50 shown)" : ""}`;
  const first = tree.querySelector(".opv-hit");
  if (first) first.scrollIntoView({block: "center"});
}
function expandAll() {
  let rows = tree.querySelectorAll(".opv-node").length;
  const queue = [...tree.querySelectorAll(":scope>.opv-node")];
  while (queue.length && rows < MAXROWS) {
    const div = queue.shift(), n = N[+div.dataset.i];
    if (!n.kids.length) continue;
    open(div, true);
    rows += Math.min(n.kids.length, CHUNK);
    queue.push(...div.querySelectorAll(":scope>.opv-kids>.opv-node"));
  }
  found.textContent = rows >= MAXROWS ? `expanded the first ${MAXROWS} rows` : "";
}
root.addEventListener("click", ev => {
  const t = ev.target.closest("[data-a]");
  if (!t || !root.contains(t)) return;
  const action = t.dataset.a;
  if (action === "tog") { open(t.closest(".opv-node")); ev.stopPropagation(); }
  else if (action === "det") toggleDetail(t.closest(".opv-node"));
  else if (action === "more") {
    const box = t.closest(".opv-more").parentNode;
    fill(box, box.opvList, +t.dataset.from);
  }
  else if (action === "go") go(+t.dataset.i);
  else if (action === "all") {
    const list = t.parentNode;
    if (list.children.length < 2) {  // filled on first open
      const n = N[+t.closest(".opv-detail").parentNode.dataset.i];
      list.insertAdjacentHTML("beforeend", `<div>${hiddenList(n, t.dataset.r)}</div>`);
    }
  }
  else if (action === "zoom") lightbox(+t.dataset.o, +t.dataset.k);
  else if (action.startsWith("lb-")) lightboxAction(action, t);
  else if (action === "tab") {
    const box = t.closest(".opv-detail"), n = N[+box.parentNode.dataset.i];
    box.querySelectorAll(".opv-tabs button").forEach(b => b.classList.toggle("opv-on", b === t));
    const panel = box.querySelector(".opv-panel"), kind = t.dataset.t;
    panel.innerHTML = kind === "saw" ? saw(n) : kind === "hid" ? hidden(n) : diff(n);
  }
  else if (action === "errors") {
    mark(N.filter(n => n.st === "e" && inView(n.i)).map(n => n.i), "errors");
  }
  else if (action === "collapse") {
    tree.querySelectorAll(".opv-kids").forEach(b => { b.hidden = true; });
    tree.querySelectorAll(".opv-caret").forEach(c => { if (c.textContent) c.textContent = "▸"; });
  }
  else if (action === "expand") expandAll();
});
bar.querySelector("input").addEventListener("keydown", ev => {
  if (ev.key !== "Enter") return;
  const q = ev.target.value.trim().toLowerCase();
  if (!q) { mark([], "matches"); return; }
  mark(N.filter(n => inView(n.i) && (n.id.startsWith(q) || n.name.toLowerCase().includes(q)
    || n.inp.toLowerCase().includes(q) || n.out.toLowerCase().includes(q)
    || (n.x.err || "").toLowerCase().includes(q))).map(n => n.i),
  "matches");
});
if (roots.length <= 3) for (const i of roots) open(nodeDiv(i), true);
const link = /[#&]n=([0-9a-zA-Z_-]+)/.exec(location.hash || "");
const tab = /[#&]t=(saw|hid|diff)\b/.exec(location.hash || "");
if (link && byId[link[1]] !== undefined) {
  go(byId[link[1]]);
  const button = tab && nodeDiv(byId[link[1]]).querySelector(`[data-t="${tab[1]}"]`);
  if (button) button.click();
  nodeDiv(byId[link[1]]).firstChild.scrollIntoView({block: "start"});
  const picture = /[#&]i=([0-9a-f]{6,64})/.exec(location.hash || "");
  const k = picture ? D.images.findIndex(m => picture[1].startsWith(m[0])) : -1;
  if (k >= 0) lightbox(byId[link[1]], k);
}
})("%ID%");
