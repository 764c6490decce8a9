/* Agent World viewer: one page, no build step, no libraries.
 *
 * Sections: constants, helpers, api, state store + spatial index, view, renderer,
 * ws, inspector, events, scoreboard, charts, controls, status, replay, input, boot.
 * The world is the server's; this page only mirrors what it is sent and never guesses.
 */
'use strict';
(() => {

// -- constants ----------------------------------------------------------------------------

// Colours from Okabe and Ito's palette, told apart with every common colour-vision
// deficiency (tests/test_viewer_palette.py simulates deuteranopia, protanopia and
// tritanopia); each personality has its own shape as well, so colour is never the only cue.
const PERSONALITY_COLORS = {
  aggressive: '#D55E00', cautious: '#56B4E9', gatherer: '#F0E442', trader: '#CC79A7',
};
const PERSONALITY_SHAPES = { aggressive: 'triangle', cautious: 'circle', gatherer: 'square', trader: 'diamond' };
const BRAIN_COLORS = { builtin: '#56B4E9', llm: '#E69F00', remote: '#CC79A7' };
// Teams take these in the order the page first sees them (the first four stay apart for
// every common colour-vision deficiency: tests/test_viewer_palette.py).
const TEAM_COLORS = { team1: '#D55E00', team2: '#0072B2', team3: '#F0E442', team4: '#56B4E9',
  team5: '#CC79A7', team6: '#009E73' };
const TEAM_PALETTE = Object.values(TEAM_COLORS);
const OTHER_COLOR = '#dddddd';
// Terrain ids are the server's legend keys; unknown ids get magenta so they stand out.
const TERRAIN_RGB = { grass: [88, 122, 66], water: [38, 92, 160], rock: [128, 122, 114] };
// Objects: at far zoom one pixel per tile in these colours (light against dark and dark
// against light, so they part by lightness too); closer, each kind has its own drawing.
const OBJECT_COLORS = { tree: '#173d1c', berry_bush: '#CC79A7', rock: '#d9d4c8', shelter: '#d9a066', hazard: '#D55E00', capture_point: '#F0E442' };
const OBJECT_NAMES = { tree: 'tree', berry_bush: 'berry bush', rock: 'rock', shelter: 'shelter', hazard: 'hazard', capture_point: 'capture point' };
const ITEM_CATEGORY = {
  berries: 'food', apple: 'food', bread: 'food', meat: 'food', wood: 'material',
  stone: 'material', iron: 'material', club: 'weapon', spear: 'weapon', sword: 'weapon',
  herb: 'medicine', gold: 'gold',
};
const CATEGORY_COLORS = {
  food: '#ff8c5a', material: '#c49a6c', weapon: '#f0f0f0', medicine: '#5ef0c0', gold: '#ffd700',
};
const ITEMS = Object.keys(ITEM_CATEGORY);
const ENTITY_KEYS = ['agent', 'target', 'victim', 'to', 'killer'];
const NO_ONE = 0;
const THINKING = 1, DEFENDING = 2, PLAYED = 4;
const BUCKET = 32;                // tiles per spatial bucket side
const MAX_EVENTS = 300;
const SUB_RATE = 10;
const MIN_ITEM_SCALE = 2;         // below this items are sub-pixel noise: not drawn, not subscribed
const OBJECT_SPRITE_SCALE = 3;    // below this objects come from a cached 1-px-per-tile layer
const PALETTE = ['#ff6b6b', '#ffd43b', '#69db7c', '#4dabf7', '#da77f2', '#ff922b', '#38d9a9',
  '#f783ac', '#a9e34b', '#74c0fc', '#e599f7', '#ffa8a8', '#c0eb75'];

// -- helpers ------------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);
const clamp = (v, lo, hi) => (v < lo ? lo : v > hi ? hi : v);
const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ESC[c]);
const isInt = (v) => Number.isInteger(v);
const fmt = (v, d = 2) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : String(v ?? '–'));
function goods(obj) {
  if (!obj || typeof obj !== 'object') return String(obj ?? '');
  const parts = Object.entries(obj).map(([k, q]) => `${q} ${k}`);
  return parts.length ? parts.join(', ') : 'nothing';
}
// Quote one word for the console's shlex split: inside double quotes only \ and " escape.
const shQuote = (s) => '"' + String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
// Colour agents by personality (the default), brain (an `llm:NAME` brain as `llm`) or team.
const teamSlots = new Map();  // team name -> palette index, in the order first seen
function teamColor(team) {
  if (!team) return OTHER_COLOR;
  if (!teamSlots.has(team)) {
    teamSlots.set(team, teamSlots.size);
    if (ui.colorBy === 'team') queueMicrotask(renderLegend);
  }
  return TEAM_PALETTE[teamSlots.get(team) % TEAM_PALETTE.length];
}
function agentColor(personality, brain, team) {
  if (ui.colorBy === 'brain') return BRAIN_COLORS[String(brain).split(':')[0]] || OTHER_COLOR;
  if (ui.colorBy === 'team') return teamColor(team);
  return PERSONALITY_COLORS[personality] || OTHER_COLOR;
}
function hpColor(hp) { return hp > 60 ? '#46c46e' : hp > 30 ? '#f5b041' : '#ef5b5b'; }

const ui = { colorBy: 'personality', readOnly: false, replay: false, picking: false, readsNeedToken: false, hearing: 0 };

// -- api ----------------------------------------------------------------------------------

// The access token: never in a URL (it would reach histories and logs). Asked for once per
// tab when the server answers 401, kept in sessionStorage, sent as 'Authorization: Bearer'
// on HTTP and as the feed's first message where the feed needs it (a world served beyond
// loopback). The world shows it on its terminal at start-up and keeps it in web-PORT.json.
const TOKEN_KEY = 'agentWorld.token';
const token = {
  asking: null,
  get() { return sessionStorage.getItem(TOKEN_KEY); },
  forget() { sessionStorage.removeItem(TOKEN_KEY); },
  // One prompt however many requests were refused at once.
  ask(why) {
    if (!this.asking) {
      this.asking = new Promise((resolve) => {
        setTimeout(() => {
          const given = window.prompt(`${why}\nThe world printed its access token on its terminal at start-up; it is also in web-${location.port || 80}.json in its runtime folder (~/.local/share/agent-world/runtime).`, '');
          if (given && given.trim()) sessionStorage.setItem(TOKEN_KEY, given.trim());
          this.asking = null;
          resolve(!!(given && given.trim()));
        }, 0);
      });
    }
    return this.asking;
  },
  headers(extra = {}) {
    const t = this.get();
    return t ? { ...extra, Authorization: `Bearer ${t}` } : extra;
  },
};

const api = {
  async get(path) {
    for (let attempt = 0; ; attempt++) {
      const r = await fetch(path, { cache: 'no-store', headers: token.headers() });
      let body;
      try { body = await r.json(); } catch { body = { error: `HTTP ${r.status}` }; }
      if (r.status === 401 && attempt < 2) {
        ui.readsNeedToken = true;
        if (attempt) token.forget();
        if (await token.ask('Reading this world needs its access token.')) continue;
      }
      if (!r.ok) {
        const e = new Error(body.error || `HTTP ${r.status}`);
        e.status = r.status;
        throw e;
      }
      return body;
    }
  },
  // Every write goes through the console's own parser on the server; this only carries it.
  async command(line) {
    let asked = false;
    for (;;) {
      let r;
      try {
        r = await fetch('/api/commands', { method: 'POST', headers: token.headers({ 'Content-Type': 'application/json' }), body: JSON.stringify({ command: line }) });
      } catch (err) {
        return { ok: false, reply: [`error: the server did not answer (${err.message})`] };
      }
      let body;
      try { body = await r.json(); } catch { body = { error: `HTTP ${r.status}` }; }
      if (r.status === 401) {
        if (asked) {
          token.forget();
          return { ok: false, reply: ['error: the access token was refused'] };
        }
        asked = true;
        if (!(await token.ask('Commands need this world\'s access token.'))) {
          return { ok: false, reply: [`error: ${body.error || 'an access token is needed'}`] };
        }
        continue;
      }
      if (Array.isArray(body.reply)) return { ok: !!body.ok, reply: body.reply, tick: body.tick };
      return { ok: false, reply: [`error: ${body.error || `HTTP ${r.status}`}`] };
    }
  },
};

// -- state store + spatial index ----------------------------------------------------------

// One layer of drawable entities: records exactly as the server sends them (arrays whose
// leading fields are id, x, y), indexed by id and by 32x32-tile bucket so drawing and
// hit-testing touch only what is on screen.
class Layer {
  constructor(name) {
    this.name = name;
    this.byId = new Map();
    this.buckets = [new Set()];
    this.nbx = 1; this.nby = 1;
  }
  resize(w, h) {
    this.nbx = Math.max(1, Math.ceil(w / BUCKET));
    this.nby = Math.max(1, Math.ceil(h / BUCKET));
    this.buckets = Array.from({ length: this.nbx * this.nby }, () => new Set());
    for (const r of this.byId.values()) this.buckets[this.bucketOf(r[1], r[2])].add(r);
  }
  bucketOf(x, y) {
    const bx = clamp(Math.floor(x / BUCKET), 0, this.nbx - 1);
    const by = clamp(Math.floor(y / BUCKET), 0, this.nby - 1);
    return by * this.nbx + bx;
  }
  clear() { this.byId.clear(); for (const b of this.buckets) b.clear(); }
  get size() { return this.byId.size; }
  get(id) { return this.byId.get(id); }
  put(rec) {
    const old = this.byId.get(rec[0]);
    if (old) this.buckets[this.bucketOf(old[1], old[2])].delete(old);
    this.byId.set(rec[0], rec);
    this.buckets[this.bucketOf(rec[1], rec[2])].add(rec);
  }
  // Deltas carry absolute leading fields: overwrite in place, move bucket if needed.
  upd(u) {
    const rec = this.byId.get(u[0]);
    if (!rec) return false;
    const before = this.bucketOf(rec[1], rec[2]);
    for (let i = 1; i < u.length; i++) rec[i] = u[i];
    const after = this.bucketOf(rec[1], rec[2]);
    if (before !== after) { this.buckets[before].delete(rec); this.buckets[after].add(rec); }
    return true;
  }
  drop(id) {
    const rec = this.byId.get(id);
    if (!rec) return false;
    this.buckets[this.bucketOf(rec[1], rec[2])].delete(rec);
    this.byId.delete(id);
    return true;
  }
  // Calls fn(rec) for records with x0 <= x < x1, y0 <= y < y1 (tile coordinates).
  forEachIn(x0, y0, x1, y1, fn) {
    const bx0 = clamp(Math.floor(x0 / BUCKET), 0, this.nbx - 1);
    const bx1 = clamp(Math.floor((x1 - 1e-9) / BUCKET), 0, this.nbx - 1);
    const by0 = clamp(Math.floor(y0 / BUCKET), 0, this.nby - 1);
    const by1 = clamp(Math.floor((y1 - 1e-9) / BUCKET), 0, this.nby - 1);
    for (let by = by0; by <= by1; by++) {
      for (let bx = bx0; bx <= bx1; bx++) {
        for (const r of this.buckets[by * this.nbx + bx]) {
          const x = r[1], y = r[2];
          if (x >= x0 - 1 && x < x1 && y >= y0 - 1 && y < y1) fn(r);
        }
      }
    }
  }
}

const store = {
  world: '', tick: 0, width: 0, height: 0,
  agents: new Layer('agents'), items: new Layer('items'), objects: new Layer('objects'),
  fields: null,
  names: new Map(),          // id -> name, from every record and event seen (for summaries)
  events: [],                // newest first, at most MAX_EVENTS
  eventKeys: new Set(),
  eventTypes: new Set(),
  objectsDirty: true,        // the cached object layer must be rebuilt
  frames: 0,
  setMap(w, h) {
    if (w === this.width && h === this.height) return;
    this.width = w; this.height = h;
    for (const l of [this.agents, this.items, this.objects]) l.resize(w, h);
    this.objectsDirty = true;
  },
  applyKey(msg) {
    if (msg.map) this.setMap(msg.map.width, msg.map.height);
    this.fields = msg.fields || this.fields;
    // A keyframe replaces its layers; layers it lacks are no longer subscribed, so they
    // would never be updated again: empty them rather than show stale things.
    const now = performance.now();
    for (const name of ['agents', 'items', 'objects']) {
      const layer = this[name];
      const before = name === 'agents' ? new Map(layer.byId) : null;
      layer.clear();
      for (const rec of msg[name] || []) {
        layer.put(rec);
        const old = before && before.get(rec[0]);
        if (old && (old[1] !== rec[1] || old[2] !== rec[2])) motion.moved(rec[0], old[1], old[2], rec[1], rec[2], now);
      }
    }
    for (const id of motion.byId.keys()) if (!this.agents.byId.has(id)) motion.byId.delete(id);
    for (const rec of msg.agents || []) this.names.set(rec[0], rec[5]);
    this.objectsDirty = true;
    this.tick = msg.tick;
  },
  applyDelta(msg) {
    this.tick = msg.tick;
    for (const name of ['agents', 'items', 'objects']) {
      const part = msg[name];
      if (!part) continue;
      const layer = this[name];
      if (part.drop) for (const id of part.drop) { layer.drop(id); if (name === 'agents') motion.byId.delete(id); }
      if (part.add) for (const rec of part.add) layer.put(rec);
      if (part.upd) for (const u of part.upd) this.update(layer, u);
      if (name === 'agents' && part.add) for (const rec of part.add) this.names.set(rec[0], rec[5]);
      if (name === 'objects' && (part.add || part.drop)) this.objectsDirty = true;
    }
  },
  // An agent that moved glides there (motion); other records are simply overwritten.
  update(layer, u) {
    if (layer === this.agents) {
      const rec = layer.get(u[0]);
      if (rec && u.length > 2 && (rec[1] !== u[1] || rec[2] !== u[2])) motion.moved(u[0], rec[1], rec[2], u[1], u[2], performance.now());
    }
    layer.upd(u);
  },
  learnNames(e) {
    if (isInt(e.agent) && typeof e.name === 'string') this.names.set(e.agent, e.name);
    if (isInt(e.target) && typeof e.target_name === 'string') this.names.set(e.target, e.target_name);
    if (isInt(e.to) && typeof e.to_name === 'string') this.names.set(e.to, e.to_name);
    if (isInt(e.victim) && typeof e.victim_name === 'string') this.names.set(e.victim, e.victim_name);
  },
  // Events from the socket and from /api/events may overlap: keyed by tick, kind, seq, type.
  addEvents(list) {
    let added = 0;
    for (const e of list) {
      const key = `${e.tick}:${e.kind}:${e.seq}:${e.type}`;
      if (this.eventKeys.has(key)) continue;
      this.eventKeys.add(key);
      this.learnNames(e);
      if (e.type) this.eventTypes.add(e.type);
      this.events.push(e);
      added++;
    }
    if (!added) return 0;
    this.events.sort((a, b) => (b.tick - a.tick) || ((b.seq ?? 0) - (a.seq ?? 0)));
    if (this.events.length > MAX_EVENTS) {
      for (const e of this.events.splice(MAX_EVENTS)) this.eventKeys.delete(`${e.tick}:${e.kind}:${e.seq}:${e.type}`);
    }
    return added;
  },
  nameOf(id) {
    if (!isInt(id) || id === NO_ONE) return null;
    const rec = this.agents.get(id);
    return rec ? rec[5] : (this.names.get(id) ?? null);
  },
};

// -- view ---------------------------------------------------------------------------------

// cx, cy: the tile coordinate at the focus point; scale: CSS pixels per tile. The focus
// is the canvas centre, moved right by offX while the inspector covers the left edge, so
// "centre on" and "follow" put things where they can be seen.
const view = {
  cx: 32, cy: 32, scale: 8, w: 800, h: 600, dpr: 1, offX: 0,
  fx() { return this.w / 2 + this.offX; },
  toScreen(tx, ty) { return [(tx - this.cx) * this.scale + this.fx(), (ty - this.cy) * this.scale + this.h / 2]; },
  toTile(px, py) { return [(px - this.fx()) / this.scale + this.cx, (py - this.h / 2) / this.scale + this.cy]; },
  rect() {
    const hh = this.h / 2 / this.scale;
    return { x0: this.cx - this.fx() / this.scale, y0: this.cy - hh,
      x1: this.cx + (this.w - this.fx()) / this.scale, y1: this.cy + hh };
  },
  setOffset(px) {
    if (px === this.offX) return;
    this.cx += (px - this.offX) / this.scale;  // keep the picture where it is
    this.offX = px;
    this.changed();
  },
  minScale() {
    if (!store.width) return 0.05;
    return Math.min(0.5, Math.min(this.w / store.width, this.h / store.height) * 0.5);
  },
  maxScale() { return 64; },
  clampCentre() {
    if (!store.width) return;
    this.cx = clamp(this.cx, 0, store.width);
    this.cy = clamp(this.cy, 0, store.height);
  },
  zoomAt(px, py, factor) {
    const [tx, ty] = this.toTile(px, py);
    this.scale = clamp(this.scale * factor, this.minScale(), this.maxScale());
    this.cx = tx - (px - this.fx()) / this.scale;
    this.cy = ty - (py - this.h / 2) / this.scale;
    this.changed();
  },
  panBy(dxPx, dyPx) {
    this.cx -= dxPx / this.scale;
    this.cy -= dyPx / this.scale;
    this.changed();
  },
  centreOn(tx, ty, scale) {
    this.cx = tx + 0.5; this.cy = ty + 0.5;
    if (scale) this.scale = clamp(scale, this.minScale(), this.maxScale());
    this.changed();
  },
  fit() {
    if (!store.width) return;
    // Clear of the tools along the top (the same margin below keeps the map centred).
    const top = this.h > 300 ? 2 * TOOLS_H : 0;
    this.scale = clamp(Math.min((this.w - 2 * this.offX) / store.width, (this.h - top) / store.height) * 0.98, this.minScale(), this.maxScale());
    this.cx = store.width / 2; this.cy = store.height / 2;
    this.changed();
  },
  changed() {
    this.clampCentre();
    requestRender();
    subs.check();
  },
};

// -- motion, speech and effects -----------------------------------------------------------

// The feed sends absolute positions a few times a second; between them an agent glides from
// where it was drawn to where it now is, over about one frame interval, and faces the way
// it last moved. Only drawing changes: the records stay as the server sent them.
const JUMP = 3;
const TOOLS_H = 40;  // px the map tools take along the top of the map  // tiles: a longer move (a seek, a teleport) is shown as a jump
const motion = {
  byId: new Map(),     // id -> {fx, fy, t0, dir}: glide start, start time, facing (radians)
  interval: 100,       // ms between frames, a moving average
  lastFrameAt: 0,
  until: 0,            // glides last until then: keep drawing
  x: 0, y: 0,          // out-parameters of at(), so the hot loop allocates nothing
  frameArrived(now) {
    if (this.lastFrameAt) this.interval = clamp(0.8 * this.interval + 0.2 * (now - this.lastFrameAt), 40, 400);
    this.lastFrameAt = now;
  },
  moved(id, ox, oy, nx, ny, now) {
    const m = this.byId.get(id);
    let fx = ox, fy = oy;
    if (m) { this.at(m, ox, oy, now); fx = this.x; fy = this.y; }
    if (Math.abs(nx - fx) > JUMP || Math.abs(ny - fy) > JUMP) { fx = nx; fy = ny; }
    const dir = nx !== ox || ny !== oy ? Math.atan2(ny - oy, nx - ox) : (m ? m.dir : null);
    if (m) { m.fx = fx; m.fy = fy; m.t0 = now; m.dir = dir; } else this.byId.set(id, { fx, fy, t0: now, dir });
    this.until = Math.max(this.until, now + this.interval);
  },
  // Where the agent whose record says (x, y) is drawn at time now: sets this.x, this.y.
  at(m, x, y, now) {
    const t = m ? (now - m.t0) / this.interval : 1;
    if (t >= 1) { this.x = x; this.y = y; return; }
    const k = t <= 0 ? 0 : t * (2 - t);  // ease out
    this.x = m.fx + (x - m.fx) * k; this.y = m.fy + (y - m.fy) * k;
  },
  of(a, now) { this.at(this.byId.get(a[0]), a[1], a[2], now); },
  clear() { this.byId.clear(); },
};

// Speech bubbles: what an agent said, over its head for a few seconds.
const SPEECH_MS = 5000;
const speech = {
  byId: new Map(),  // speaker id -> {text, to, until}
  said(e, now) {
    const text = String(e.text ?? '');
    if (!isInt(e.agent) || !text) return;
    this.byId.set(e.agent, { text: text.length > 90 ? text.slice(0, 88) + '…' : text, to: isInt(e.to) ? e.to : null, until: now + SPEECH_MS });
  },
  prune(now) { for (const [id, b] of this.byId) if (b.until <= now) this.byId.delete(id); },
};

// Short effects where things happen: a fight, a theft, a trade or gift, a death, a cast.
const EFFECT_MS = 1400;
const EFFECT_STYLE = {
  attack: { color: '#ff4d4d', line: true }, theft: { color: '#CC79A7', line: true, dash: true },
  trade: { color: '#F0E442', line: true }, gift: { color: '#F0E442', line: true },
  death: { color: '#ffffff', cross: true }, ability: { color: '#56B4E9', burst: true },
  capture: { color: '#F0E442', burst: true }, spawn: { color: '#009E73', burst: true },
};
const effects = {
  list: [],
  add(e, now) {
    const style = EFFECT_STYLE[e.type];
    if (!style || !isInt(e.x) || !isInt(e.y)) return;
    const other = e.target ?? e.victim ?? e.to;
    const rec = isInt(other) ? store.agents.get(other) : null;
    this.list.push({ style, x: e.x, y: e.y, tx: rec ? rec[1] : null, ty: rec ? rec[2] : null, t0: now });
    if (this.list.length > 300) this.list.splice(0, this.list.length - 300);
  },
  prune(now) { if (this.list.length && this.list[0].t0 + EFFECT_MS < now) this.list = this.list.filter((f) => f.t0 + EFFECT_MS > now); },
};

// What the feed's events show on the map.
function eventsOnMap(list, now) {
  for (const e of list) {
    if (e.kind && e.kind !== 'event') continue;
    if (e.type === 'say' || e.type === 'team_say') speech.said(e, now);
    else effects.add(e, now);
  }
  chat.fromEvents(list);
  play.fromEvents(list);
}

// -- renderer -----------------------------------------------------------------------------

const canvas = $('map');
const ctx = canvas.getContext('2d', { alpha: false });
const terrain = { canvas: null, legend: {} };
const objectLayer = { canvas: null, ctx: null, image: null };
const flash = { x: 0, y: 0, until: 0 };
let renderQueued = false;
let lastDrawn = 0;
const perf = { renders: 0, lastRenderMs: 0 };  // read by tests and curious users

function requestRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(render);
}

// Frames drawn per second, counted by the page itself (the status line and the benchmark
// read it); perf.measure(ms) draws every animation frame for ms and returns the rate.
function countFrame(now) {
  perf.frameTimes.push(now);
  while (perf.frameTimes.length && perf.frameTimes[0] < now - 1000) perf.frameTimes.shift();
  perf.fps = perf.frameTimes.length;
}
perf.frameTimes = [];
perf.fps = 0;
perf.measure = (ms) => new Promise((resolve) => {
  const start = performance.now();
  let frames = 0, worst = 0, last = start;
  perf.measuring = true;  // render() asks for no frames of its own meanwhile
  const step = (t) => {
    render(); frames++;
    worst = Math.max(worst, t - last); last = t;
    if (t - start < ms) requestAnimationFrame(step);
    else { perf.measuring = false; requestRender(); resolve({ fps: frames * 1000 / (t - start), frames, worst_ms: worst, drawn: lastDrawn, render_ms: perf.lastRenderMs }); }
  };
  requestAnimationFrame(step);
});

// Setting a canvas' size clears it: draw at once, in the same frame, or a resize shows one
// black frame (and a capture taken then, an all-black map).
function resizeCanvas() {
  const box = canvas.parentElement.getBoundingClientRect();
  view.dpr = window.devicePixelRatio || 1;
  view.w = Math.max(1, box.width); view.h = Math.max(1, box.height);
  canvas.width = Math.round(view.w * view.dpr);
  canvas.height = Math.round(view.h * view.dpr);
  if (inspector.id != null) view.offX = inspectorOffset();
  view.changed();
  render();
}

// One load at a time: the page start and a WebSocket hello may both ask for the map.
let terrainLoading = null;
function ensureTerrain(force = false) {
  if (!terrainLoading || force) {
    terrainLoading = loadTerrain().catch((e) => {
      terrainLoading = null;
      $('loading').hidden = false;
      $('loading').textContent = `cannot load the map: ${e.message}`;
      throw e;
    });
  }
  return terrainLoading;
}

async function loadTerrain() {
  const m = await api.get('/api/map');
  const raw = Uint8Array.from(atob(m.tiles), (c) => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream('deflate'));
  const tiles = new Uint8Array(await new Response(stream).arrayBuffer());
  const cv = document.createElement('canvas');
  cv.width = m.width; cv.height = m.height;
  const c2 = cv.getContext('2d');
  const img = c2.createImageData(m.width, m.height);
  const lut = {};
  for (const [k, name] of Object.entries(m.legend || {})) lut[k] = TERRAIN_RGB[name] || [255, 0, 255];
  const d = img.data;
  for (let i = 0, n = Math.min(tiles.length, m.width * m.height); i < n; i++) {
    const c = lut[tiles[i]] || [255, 0, 255];
    // A little per-tile noise keeps large grass areas from looking like flat paint.
    const j = ((i * 2654435761) >>> 28) - 8;
    d[i * 4] = c[0] + j; d[i * 4 + 1] = c[1] + j; d[i * 4 + 2] = c[2] + j; d[i * 4 + 3] = 255;
  }
  c2.putImageData(img, 0, 0);
  terrain.canvas = cv;
  terrain.legend = m.legend || {};
  terrain.tiles = tiles;
  const first = !terrain.fitted;
  terrain.fitted = true;
  store.setMap(m.width, m.height);
  $('loading').hidden = true;
  if (first) view.fit(); else requestRender();
}

function terrainAt(x, y) {
  if (!terrain.tiles || x < 0 || y < 0 || x >= store.width || y >= store.height) return null;
  return terrain.legend[terrain.tiles[y * store.width + x]] ?? '?';
}

// Objects hardly ever appear or vanish, and at far zoom there can be tens of thousands:
// keep them in a 1-pixel-per-tile canvas drawn scaled like the terrain.
function rebuildObjectLayer() {
  const w = store.width, h = store.height;
  if (!w) return;
  if (!objectLayer.canvas || objectLayer.canvas.width !== w || objectLayer.canvas.height !== h) {
    objectLayer.canvas = document.createElement('canvas');
    objectLayer.canvas.width = w; objectLayer.canvas.height = h;
    objectLayer.ctx = objectLayer.canvas.getContext('2d');
    objectLayer.image = objectLayer.ctx.createImageData(w, h);
  }
  const d = objectLayer.image.data;
  d.fill(0);
  const rgb = {};
  for (const [k, hex] of Object.entries(OBJECT_COLORS)) rgb[k] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  for (const r of store.objects.byId.values()) {
    const x = r[1], y = r[2];
    if (x < 0 || y < 0 || x >= w || y >= h) continue;
    const c = rgb[r[4]] || [220, 220, 220];
    const i = (y * w + x) * 4;
    d[i] = c[0]; d[i + 1] = c[1]; d[i + 2] = c[2]; d[i + 3] = 255;
  }
  objectLayer.ctx.putImageData(objectLayer.image, 0, 0);
  store.objectsDirty = false;
}

// Draws the part of a 1-pixel-per-tile canvas that is on screen, scaled.
function blitTileCanvas(src, r) {
  const sx0 = Math.max(0, Math.floor(r.x0)), sy0 = Math.max(0, Math.floor(r.y0));
  const sx1 = Math.min(store.width, Math.ceil(r.x1)), sy1 = Math.min(store.height, Math.ceil(r.y1));
  if (sx1 <= sx0 || sy1 <= sy0) return;
  const [dx, dy] = view.toScreen(sx0, sy0);
  ctx.imageSmoothingEnabled = view.scale < 1;
  ctx.drawImage(src, sx0, sy0, sx1 - sx0, sy1 - sy0, dx, dy, (sx1 - sx0) * view.scale, (sy1 - sy0) * view.scale);
}

// Reused per-colour buckets so a frame with 10,000 agents allocates next to nothing.
const groups = new Map();
function group(key) {
  let g = groups.get(key);
  if (!g) { g = []; groups.set(key, g); }
  return g;
}
function resetGroups() { for (const g of groups.values()) g.length = 0; }

// Where each visible agent is drawn this frame (screen pixels), by its index in seen.
const seen = { recs: [], xs: new Float32Array(1024), ys: new Float32Array(1024), n: 0 };
function collectAgents(r, now, ox, oy, s) {
  seen.n = 0; seen.recs.length = 0;
  store.agents.forEachIn(r.x0 - 1, r.y0 - 1, r.x1 + 1, r.y1 + 1, (a) => {
    if (seen.n >= seen.xs.length) {
      const xs = new Float32Array(seen.xs.length * 2), ys = new Float32Array(seen.ys.length * 2);
      xs.set(seen.xs); ys.set(seen.ys); seen.xs = xs; seen.ys = ys;
    }
    motion.of(a, now);
    seen.xs[seen.n] = ox + (motion.x + 0.5) * s; seen.ys[seen.n] = oy + (motion.y + 0.5) * s;
    seen.recs.push(a); seen.n++;
  });
}

function render() {
  renderQueued = false;
  const now = performance.now();
  followSelected(now);
  const s = view.scale, W = view.w, H = view.h;
  ctx.setTransform(view.dpr, 0, 0, view.dpr, 0, 0);
  ctx.fillStyle = '#0a0c0f';
  ctx.fillRect(0, 0, W, H);
  const r = view.rect();
  const ox = view.fx() - view.cx * s, oy = H / 2 - view.cy * s;  // screen x, y of tile 0,0
  if (terrain.canvas) blitTileCanvas(terrain.canvas, r);
  if (s >= 14 && store.width) drawGrid(r, ox, oy, s);
  drawObjects(r, ox, oy, s);
  if (s >= MIN_ITEM_SCALE) drawItems(r, ox, oy, s);
  collectAgents(r, now, ox, oy, s);
  const ar = clamp(s * 0.38, 3, 15);
  const sel = inspector.id != null ? store.agents.get(inspector.id) : null;
  if (sel) drawHearing(sel, now, ox, oy, s, ar);
  drawEffects(now, ox, oy, s);
  drawAgents(s, ar);
  if (s >= 8) drawHealth(ar, s);
  drawNames(s, ar, sel);
  if (sel) drawSelected(sel, now, ox, oy, s, ar);
  drawSpeech(now, s, ar, sel);
  drawFlash(now, ox, oy, s);
  if (ui.picking && hover.tile) {
    const [tx, ty] = hover.tile;
    ctx.strokeStyle = '#5aa9ff'; ctx.lineWidth = 2;
    ctx.strokeRect(ox + tx * s, oy + ty * s, Math.max(s, 3), Math.max(s, 3));
  }
  lastDrawn = seen.n;
  perf.renders++;
  perf.lastRenderMs = performance.now() - now;
  countFrame(now);
  document.body.dataset.agentsDrawn = String(seen.n);
  if (terrain.canvas) document.body.dataset.mapDrawn = '1';
  updateZoomInfo();
  minimap.draw();
  // Keep drawing while something moves: glides, bubbles, effects.
  if (!perf.measuring && (motion.until > now || speech.byId.size || effects.list.length || flash.until > now)) requestRender();
}

function drawGrid(r, ox, oy, s) {
  ctx.strokeStyle = 'rgba(0,0,0,0.14)'; ctx.lineWidth = 1;
  ctx.beginPath();
  const gx0 = Math.max(0, Math.floor(r.x0)), gx1 = Math.min(store.width, Math.ceil(r.x1));
  const gy0 = Math.max(0, Math.floor(r.y0)), gy1 = Math.min(store.height, Math.ceil(r.y1));
  for (let x = gx0; x <= gx1; x++) { const px = Math.round(ox + x * s) + 0.5; ctx.moveTo(px, oy + gy0 * s); ctx.lineTo(px, oy + gy1 * s); }
  for (let y = gy0; y <= gy1; y++) { const py = Math.round(oy + y * s) + 0.5; ctx.moveTo(ox + gx0 * s, py); ctx.lineTo(ox + gx1 * s, py); }
  ctx.stroke();
}

// Each kind of object has a drawing of its own once tiles are a few pixels wide: a tree is a
// dark crown on a trunk, a bush a round shrub with berries, a rock a pale boulder, a shelter
// a hut, a hazard a spiked diamond, a capture point a flag in a ring. Harvested-bare ones fade.
const OBJECT_DRAW = {
  tree(c, x, y, s) { c.moveTo(x + s * 0.42, y); c.arc(x, y - s * 0.06, s * 0.42, 0, Math.PI * 2); },
  berry_bush(c, x, y, s) { c.moveTo(x + s * 0.32, y + s * 0.05); c.arc(x, y + s * 0.05, s * 0.32, 0, Math.PI * 2); },
  rock(c, x, y, s) { const k = s * 0.34; c.moveTo(x - k, y + k * 0.7); c.lineTo(x - k * 0.8, y - k * 0.4); c.lineTo(x - k * 0.1, y - k * 0.9); c.lineTo(x + k * 0.8, y - k * 0.5); c.lineTo(x + k, y + k * 0.7); c.closePath(); },
  shelter(c, x, y, s) { const k = s * 0.4; c.moveTo(x - k, y - k * 0.1); c.lineTo(x, y - k); c.lineTo(x + k, y - k * 0.1); c.lineTo(x + k * 0.8, y - k * 0.1); c.lineTo(x + k * 0.8, y + k * 0.85); c.lineTo(x - k * 0.8, y + k * 0.85); c.lineTo(x - k * 0.8, y - k * 0.1); c.closePath(); },
  hazard(c, x, y, s) { const k = s * 0.44; c.moveTo(x, y - k); c.lineTo(x + k * 0.3, y - k * 0.3); c.lineTo(x + k, y); c.lineTo(x + k * 0.3, y + k * 0.3); c.lineTo(x, y + k); c.lineTo(x - k * 0.3, y + k * 0.3); c.lineTo(x - k, y); c.lineTo(x - k * 0.3, y - k * 0.3); c.closePath(); },
  capture_point(c, x, y, s) { const k = s * 0.42; c.moveTo(x + k, y); c.arc(x, y, k, 0, Math.PI * 2); c.moveTo(x + k * 0.6, y); c.arc(x, y, k * 0.6, 0, Math.PI * 2, true); },
};
function drawObjects(r, ox, oy, s) {
  if (s < OBJECT_SPRITE_SCALE) {
    if (store.objectsDirty) rebuildObjectLayer();
    if (objectLayer.canvas) blitTileCanvas(objectLayer.canvas, r);
    return;
  }
  resetGroups();
  store.objects.forEachIn(r.x0, r.y0, r.x1, r.y1, (o) => group((o[3] === 0 ? 'e:' : 'o:') + o[4]).push(o));
  for (const [key, list] of groups) {
    if (!list.length) continue;
    const kind = key.slice(2), shape = OBJECT_DRAW[kind];
    ctx.globalAlpha = key[0] === 'e' ? 0.5 : 1;
    ctx.beginPath();
    for (const o of list) {
      const x = ox + (o[1] + 0.5) * s, y = oy + (o[2] + 0.5) * s;
      if (shape) shape(ctx, x, y, s); else ctx.rect(x - s * 0.3, y - s * 0.3, s * 0.6, s * 0.6);
    }
    ctx.fillStyle = OBJECT_COLORS[kind] || '#cccccc';
    ctx.fill('evenodd');
    ctx.strokeStyle = kind === 'tree' ? '#9fd38a' : 'rgba(0,0,0,0.7)';
    ctx.lineWidth = s >= 10 ? 1.5 : 1;
    ctx.stroke();
    if (s >= 7) objectDetails(kind, list, ox, oy, s);
  }
  ctx.globalAlpha = 1;
}
// The second strokes of a drawing: trunks, berries, roofs, flags.
function objectDetails(kind, list, ox, oy, s) {
  const at = (o) => [ox + (o[1] + 0.5) * s, oy + (o[2] + 0.5) * s];
  ctx.beginPath();
  if (kind === 'tree') {
    for (const o of list) { const [x, y] = at(o); ctx.rect(x - s * 0.06, y + s * 0.3, s * 0.12, s * 0.18); }
    ctx.fillStyle = '#6b4423'; ctx.fill();
  } else if (kind === 'berry_bush') {
    for (const o of list) {
      if (o[3] === 0) continue;
      const [x, y] = at(o);
      for (const [dx, dy] of [[-0.12, -0.02], [0.1, 0.08], [0.0, 0.18]]) { ctx.moveTo(x + dx * s + s * 0.06, y + dy * s); ctx.arc(x + dx * s, y + dy * s, s * 0.06, 0, Math.PI * 2); }
    }
    ctx.fillStyle = '#3a1030'; ctx.fill();
  } else if (kind === 'capture_point') {
    for (const o of list) { const [x, y] = at(o); ctx.moveTo(x, y + s * 0.2); ctx.lineTo(x, y - s * 0.3); ctx.lineTo(x + s * 0.22, y - s * 0.2); ctx.lineTo(x, y - s * 0.1); }
    ctx.strokeStyle = '#1a1a1a'; ctx.lineWidth = 1.5; ctx.stroke();
  } else if (kind === 'hazard') {
    for (const o of list) { const [x, y] = at(o); ctx.moveTo(x - s * 0.12, y - s * 0.12); ctx.lineTo(x + s * 0.12, y + s * 0.12); ctx.moveTo(x + s * 0.12, y - s * 0.12); ctx.lineTo(x - s * 0.12, y + s * 0.12); }
    ctx.strokeStyle = '#1a1a1a'; ctx.lineWidth = 2; ctx.stroke();
  }
}

function drawItems(r, ox, oy, s) {
  resetGroups();
  store.items.forEachIn(r.x0, r.y0, r.x1, r.y1, (it) => group(ITEM_CATEGORY[it[4]] || 'other').push(it));
  const rad = Math.max(1, s * 0.14);
  for (const [cat, list] of groups) {
    if (!list.length) continue;
    ctx.fillStyle = CATEGORY_COLORS[cat] || '#ffffff';
    ctx.beginPath();
    for (const it of list) {
      // Items share a tile with what stands there: nudge them to a corner.
      const cx = ox + (it[1] + 0.75) * s, cy = oy + (it[2] + 0.75) * s;
      if (s < 4) ctx.rect(cx - 1, cy - 1, 2, 2);
      else { ctx.moveTo(cx + rad, cy); ctx.arc(cx, cy, rad, 0, Math.PI * 2); }
    }
    ctx.fill();
    if (s >= 6) { ctx.strokeStyle = 'rgba(0,0,0,0.6)'; ctx.lineWidth = 1; ctx.stroke(); }
  }
}

// An agent's body: its personality's shape in its colour, outlined dark.
function agentShape(c, shape, x, y, r) {
  switch (shape) {
    case 'triangle': c.moveTo(x, y - r * 1.2); c.lineTo(x + r * 1.1, y + r * 0.85); c.lineTo(x - r * 1.1, y + r * 0.85); c.closePath(); break;
    case 'square': c.rect(x - r * 0.85, y - r * 0.85, r * 1.7, r * 1.7); break;
    case 'diamond': c.moveTo(x, y - r * 1.2); c.lineTo(x + r * 1.2, y); c.lineTo(x, y + r * 1.2); c.lineTo(x - r * 1.2, y); c.closePath(); break;
    default: c.moveTo(x + r, y); c.arc(x, y, r, 0, Math.PI * 2);
  }
}
function drawAgents(s, ar) {
  resetGroups();
  for (let i = 0; i < seen.n; i++) {
    const a = seen.recs[i];
    group(`${agentColor(a[6], a[7], a[8])}|${PERSONALITY_SHAPES[a[6]] || 'circle'}`).push(i);
  }
  for (const [key, list] of groups) {
    if (!list.length) continue;
    const [color, shape] = key.split('|');
    ctx.fillStyle = color;
    ctx.beginPath();
    for (const i of list) {
      const x = seen.xs[i], y = seen.ys[i];
      if (s < 2) ctx.rect(Math.floor(x) - 1, Math.floor(y) - 1, 3, 3);
      else agentShape(ctx, shape, x, y, ar);
    }
    ctx.fill();
    if (s >= 4) { ctx.strokeStyle = 'rgba(0,0,0,0.8)'; ctx.lineWidth = 1.2; ctx.stroke(); }
  }
  if (s < 4) return;
  // Facing: a short white mark on the side the agent last moved towards.
  ctx.beginPath();
  for (let i = 0; i < seen.n; i++) {
    const m = motion.byId.get(seen.recs[i][0]);
    if (!m || m.dir == null) continue;
    const dx = Math.cos(m.dir), dy = Math.sin(m.dir), x = seen.xs[i], y = seen.ys[i];
    ctx.moveTo(x + dx * ar * 0.6, y + dy * ar * 0.6); ctx.lineTo(x + dx * (ar + 3), y + dy * (ar + 3));
  }
  ctx.strokeStyle = '#ffffff'; ctx.lineWidth = 2; ctx.stroke();
  // Waiting for its brain: a white ring; defending: a cyan shield arc.
  ctx.beginPath();
  for (let i = 0; i < seen.n; i++) {
    if (!(seen.recs[i][4] & THINKING)) continue;
    const x = seen.xs[i], y = seen.ys[i];
    ctx.moveTo(x + ar + 3, y); ctx.arc(x, y, ar + 3, 0, Math.PI * 2);
  }
  ctx.strokeStyle = '#ffffff'; ctx.lineWidth = 1.5; ctx.stroke();
  ctx.beginPath();
  for (let i = 0; i < seen.n; i++) {
    if (!(seen.recs[i][4] & DEFENDING)) continue;
    const x = seen.xs[i], y = seen.ys[i], rr = ar + 2;
    ctx.moveTo(x + rr * Math.cos(Math.PI * 0.8), y + rr * Math.sin(Math.PI * 0.8)); ctx.arc(x, y, rr, Math.PI * 0.8, Math.PI * 1.2);
    ctx.moveTo(x + rr * Math.cos(-Math.PI * 0.2), y + rr * Math.sin(-Math.PI * 0.2)); ctx.arc(x, y, rr, -Math.PI * 0.2, Math.PI * 0.2);
  }
  ctx.strokeStyle = '#7fe7ff'; ctx.lineWidth = 2; ctx.stroke();
  // Played by a person: an orange square around it.
  ctx.beginPath();
  for (let i = 0; i < seen.n; i++) {
    if (!(seen.recs[i][4] & PLAYED)) continue;
    const x = seen.xs[i], y = seen.ys[i], rr = ar + 5;
    ctx.rect(x - rr, y - rr, 2 * rr, 2 * rr);
  }
  ctx.strokeStyle = '#E69F00'; ctx.lineWidth = 2; ctx.stroke();
}

function drawHealth(ar, s) {
  const bw = Math.max(10, s * 0.9), bh = s >= 16 ? 4 : 3;
  for (let i = 0; i < seen.n; i++) {
    const a = seen.recs[i];
    const x = seen.xs[i] - bw / 2, y = seen.ys[i] - ar - bh - 5;
    ctx.fillStyle = 'rgba(0,0,0,0.75)'; ctx.fillRect(x - 1, y - 1, bw + 2, bh + 2);
    ctx.fillStyle = hpColor(a[3]); ctx.fillRect(x, y, bw * clamp(a[3], 0, 100) / 100, bh);
  }
}

const NAMES_AT = 12, NAMES_MAX = 400;  // px per tile from which names show; most at once
function drawNames(s, ar, sel) {
  const all = s >= NAMES_AT && seen.n <= NAMES_MAX;
  if (!all && !sel) return;
  ctx.font = '600 11px system-ui, sans-serif';
  ctx.textAlign = 'center'; ctx.textBaseline = 'top';
  ctx.lineWidth = 3; ctx.strokeStyle = 'rgba(0,0,0,0.85)'; ctx.fillStyle = '#fff';
  for (let i = 0; i < seen.n; i++) {
    const a = seen.recs[i];
    if (!all && a !== sel) continue;
    const x = seen.xs[i], y = seen.ys[i] + Math.max(ar, 2) + 3;
    ctx.strokeText(a[5], x, y); ctx.fillText(a[5], x, y);
  }
}

function screenAt(a, now, ox, oy, s) {
  motion.of(a, now);
  return [ox + (motion.x + 0.5) * s, oy + (motion.y + 0.5) * s];
}

function drawSelected(sel, now, ox, oy, s, ar) {
  const [x, y] = screenAt(sel, now, ox, oy, s);
  ctx.strokeStyle = '#ffe066'; ctx.lineWidth = 2;
  ctx.beginPath(); ctx.arc(x, y, Math.max(ar, 3) + 6, 0, Math.PI * 2); ctx.stroke();
}

// The selected agent's hearers while it speaks: its hearing range and a ring on each agent
// inside it; a line to the one it spoke to.
function drawHearing(sel, now, ox, oy, s, ar) {
  const b = speech.byId.get(sel[0]);
  if (!b || !ui.hearing) return;
  const [x, y] = screenAt(sel, now, ox, oy, s);
  const R = ui.hearing * s;
  ctx.setLineDash([5, 4]); ctx.strokeStyle = 'rgba(255,224,102,0.7)'; ctx.lineWidth = 1.5;
  ctx.beginPath(); ctx.arc(x, y, R, 0, Math.PI * 2); ctx.stroke(); ctx.setLineDash([]);
  ctx.beginPath();
  let hearers = 0;
  for (let i = 0; i < seen.n; i++) {
    const a = seen.recs[i];
    if (a === sel || Math.hypot(a[1] - sel[1], a[2] - sel[2]) > ui.hearing) continue;
    ctx.moveTo(seen.xs[i] + ar + 4, seen.ys[i]); ctx.arc(seen.xs[i], seen.ys[i], ar + 4, 0, Math.PI * 2);
    hearers++;
  }
  ctx.strokeStyle = '#ffe066'; ctx.lineWidth = 2; ctx.stroke();
  document.body.dataset.hearers = String(hearers);
  const to = b.to != null ? store.agents.get(b.to) : null;
  if (to) {
    const [tx, ty] = screenAt(to, now, ox, oy, s);
    ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(tx, ty); ctx.stroke();
  }
}

// Bubbles over speakers: those on screen, the selected one's always, at most 40.
function drawSpeech(now, s, ar, sel) {
  speech.prune(now);
  document.body.dataset.bubbles = '0';
  if (!speech.byId.size) return;
  ctx.font = '12px system-ui, sans-serif';
  ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
  let shown = 0;
  for (let i = 0; i < seen.n && shown < 40; i++) {
    const a = seen.recs[i];
    const b = speech.byId.get(a[0]);
    if (!b || (s < 4 && a !== sel)) continue;
    drawBubble(b, seen.xs[i], seen.ys[i] - ar - (s >= 8 ? 10 : 4), now);
    shown++;
  }
  document.body.dataset.bubbles = String(shown);
}
function drawBubble(b, x, y, now) {
  const text = b.text, w = Math.min(260, ctx.measureText(text).width) + 12, h = 20;
  const left = clamp(x - w / 2, 2, view.w - w - 2), top = y - h - 6;
  ctx.globalAlpha = clamp((b.until - now) / 600, 0, 1);
  ctx.fillStyle = 'rgba(250,250,245,0.95)'; ctx.strokeStyle = 'rgba(0,0,0,0.6)'; ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.roundRect(left, top, w, h, 6);
  ctx.moveTo(x - 4, top + h); ctx.lineTo(x, top + h + 6); ctx.lineTo(x + 4, top + h);
  ctx.fill(); ctx.stroke();
  ctx.fillStyle = '#111';
  ctx.save(); ctx.beginPath(); ctx.rect(left + 4, top, w - 8, h); ctx.clip();
  ctx.fillText(text, left + 6, top + h / 2 + 0.5);
  ctx.restore();
  ctx.globalAlpha = 1;
}

function drawEffects(now, ox, oy, s) {
  effects.prune(now);
  for (const f of effects.list) {
    const t = (now - f.t0) / EFFECT_MS;
    if (t < 0 || t > 1) continue;
    const st = f.style, x = ox + (f.x + 0.5) * s, y = oy + (f.y + 0.5) * s;
    ctx.globalAlpha = 1 - t; ctx.strokeStyle = st.color; ctx.lineWidth = 2.5;
    ctx.beginPath();
    if (st.line && f.tx != null) {
      if (st.dash) ctx.setLineDash([4, 3]);
      ctx.moveTo(x, y); ctx.lineTo(ox + (f.tx + 0.5) * s, oy + (f.ty + 0.5) * s);
    } else if (st.cross) {
      const k = Math.max(5, s * 0.5);
      ctx.moveTo(x - k, y - k); ctx.lineTo(x + k, y + k); ctx.moveTo(x + k, y - k); ctx.lineTo(x - k, y + k);
      ctx.moveTo(x + k * 1.6 + t * 10, y); ctx.arc(x, y, k * 1.6 + t * 10, 0, Math.PI * 2);
    } else {
      const rr = Math.max(4, s * 0.4) + t * Math.max(14, s * 1.5);
      ctx.moveTo(x + rr, y); ctx.arc(x, y, rr, 0, Math.PI * 2);
    }
    ctx.stroke(); ctx.setLineDash([]);
  }
  ctx.globalAlpha = 1;
}

function drawFlash(now, ox, oy, s) {
  if (flash.until <= now) return;
  const t = 1 - (flash.until - now) / 1500;
  const cx = ox + (flash.x + 0.5) * s, cy = oy + (flash.y + 0.5) * s;
  ctx.strokeStyle = `rgba(255,224,102,${1 - t})`; ctx.lineWidth = 3;
  ctx.beginPath(); ctx.arc(cx, cy, 6 + t * 36, 0, Math.PI * 2); ctx.stroke();
  ctx.beginPath(); ctx.arc(cx, cy, Math.max(4, s * 0.7), 0, Math.PI * 2); ctx.stroke();
}

// Follow: the camera glides with the selected agent (its drawn position).
function followSelected(now) {
  if (!inspector.follow || inspector.id == null) return;
  const rec = store.agents.get(inspector.id);
  let tx, ty;
  if (rec) { motion.of(rec, now); tx = motion.x + 0.5; ty = motion.y + 0.5; } else if (inspector.detail) { tx = inspector.detail.x + 0.5; ty = inspector.detail.y + 0.5; } else return;
  if (tx !== view.cx || ty !== view.cy) { view.cx = tx; view.cy = ty; subs.check(); }
}

function updateZoomInfo() {
  const t = hover.tile ? ` · ${hover.tile[0]},${hover.tile[1]} ${terrainAt(hover.tile[0], hover.tile[1]) ?? ''}` : '';
  $('zoom-info').textContent = `${view.scale >= 1 ? view.scale.toFixed(1) : view.scale.toFixed(2)} px/tile · ${lastDrawn} drawn · ${perf.fps} fps${t}`;
}

// The legend draws its swatches with the map's own drawing functions.
function renderLegend() {
  const entries = ui.colorBy === 'brain' ? Object.entries(BRAIN_COLORS)
    : ui.colorBy === 'team' ? [...teamSlots.keys()].map((t) => [t, teamColor(t)]).concat([['no team', OTHER_COLOR]])
      : Object.entries(PERSONALITY_COLORS);
  const sw = (draw) => {
    const cv = document.createElement('canvas');
    cv.width = 14; cv.height = 14; cv.className = 'sw';
    const c = cv.getContext('2d');
    c.beginPath(); draw(c); return cv;
  };
  const el = $('legend');
  el.textContent = '';
  const add = (canvasEl, label) => { const span = document.createElement('span'); span.append(canvasEl, label); el.append(span); };
  for (const [k, color] of entries) {
    add(sw((c) => { agentShape(c, ui.colorBy === 'personality' ? PERSONALITY_SHAPES[k] : 'circle', 7, 7, 4.5); c.fillStyle = color; c.fill(); c.strokeStyle = '#000'; c.stroke(); }), k);
  }
  add(sw((c) => { c.arc(7, 7, 5, 0, Math.PI * 2); c.strokeStyle = '#fff'; c.lineWidth = 1.5; c.stroke(); }), 'thinking');
  add(sw((c) => { c.rect(2, 2, 10, 10); c.strokeStyle = '#E69F00'; c.lineWidth = 2; c.stroke(); }), 'played');
  for (const [k, name] of Object.entries(OBJECT_NAMES)) {
    add(sw((c) => { c.fillStyle = '#587a42'; c.fillRect(0, 0, 14, 14); c.beginPath(); OBJECT_DRAW[k](c, 7, 7, 14); c.fillStyle = OBJECT_COLORS[k]; c.fill('evenodd'); c.strokeStyle = k === 'tree' ? '#9fd38a' : '#000'; c.stroke(); }), name);
  }
}

// Nearest agent centre within tol CSS pixels of a canvas point, or null.
function agentNear(px, py, tol = 10) {
  const [tx, ty] = view.toTile(px, py);
  const rt = tol / view.scale + 1;
  let best = null, bestD = Infinity;
  const lim = Math.max(tol, clamp(view.scale * 0.38, 3, 15) + 3);
  const now = performance.now();
  store.agents.forEachIn(tx - rt, ty - rt, tx + rt, ty + rt, (a) => {
    motion.of(a, now);
    const [sx, sy] = view.toScreen(motion.x + 0.5, motion.y + 0.5);
    const d = Math.hypot(sx - px, sy - py);
    if (d <= lim && d < bestD) { best = a; bestD = d; }
  });
  return best;
}

// The minimap: the whole terrain, the agents this page knows of, and the view's frame.
const minimap = {
  last: 0,
  draw() {
    const cv = $('minimap');
    // Only while part of the world is off screen: fitted, the map is its own minimap.
    const r = view.rect();
    cv.hidden = !store.width || (r.x0 <= 0.5 && r.y0 <= 0.5 && r.x1 >= store.width - 0.5 && r.y1 >= store.height - 0.5);
    if (!terrain.canvas || cv.hidden) return;
    const now = performance.now();
    if (now - this.last < 200) return;  // a few times a second is plenty
    this.last = now;
    const c = cv.getContext('2d'), W = cv.width, H = cv.height;
    const k = Math.min(W / store.width, H / store.height);
    const w = store.width * k, h = store.height * k, x0 = (W - w) / 2, y0 = (H - h) / 2;
    this.box = { x0, y0, k };
    c.fillStyle = '#0a0c0f'; c.fillRect(0, 0, W, H);
    c.imageSmoothingEnabled = true;
    c.drawImage(terrain.canvas, x0, y0, w, h);
    if (objectLayer.canvas) c.drawImage(objectLayer.canvas, x0, y0, w, h);
    c.fillStyle = '#ffffff';
    for (const a of store.agents.byId.values()) c.fillRect(x0 + a[1] * k - 0.5, y0 + a[2] * k - 0.5, 1.6, 1.6);
    c.strokeStyle = '#ffe066'; c.lineWidth = 1.5;
    c.strokeRect(x0 + r.x0 * k, y0 + r.y0 * k, (r.x1 - r.x0) * k, (r.y1 - r.y0) * k);
  },
  click(ev) {
    if (!this.box) return;
    const b = $('minimap').getBoundingClientRect();
    const sx = (ev.clientX - b.left) * ($('minimap').width / b.width), sy = (ev.clientY - b.top) * ($('minimap').height / b.height);
    if (inspector.follow) setFollow(false);
    view.centreOn((sx - this.box.x0) / this.box.k - 0.5, (sy - this.box.y0) / this.box.k - 0.5);
    this.last = 0;
  },
};

// -- ws -----------------------------------------------------------------------------------

// Subscriptions follow the view: a bbox of the visible tiles plus half a screen on each
// side, renewed only when the view leaves it or the zoom changes a lot, so panning inside
// it costs the server nothing.
const subs = {
  current: null,   // {bbox, layers, scale} as last sent
  timer: 0,
  desired() {
    const r = view.rect();
    const mx = (r.x1 - r.x0) / 2, my = (r.y1 - r.y0) / 2;
    const W = store.width, H = store.height;
    const layers = view.scale >= MIN_ITEM_SCALE ? ['agents', 'items', 'objects'] : ['agents', 'objects'];
    let b = [Math.floor(r.x0 - mx), Math.floor(r.y0 - my), Math.ceil(r.x1 + mx), Math.ceil(r.y1 + my)];
    if (!W || (b[0] <= 0 && b[1] <= 0 && b[2] >= W - 1 && b[3] >= H - 1)) b = null;
    else b = [Math.max(0, b[0]), Math.max(0, b[1]), Math.min(W - 1, b[2]), Math.min(H - 1, b[3])];
    if (b && (b[2] < b[0] || b[3] < b[1])) b = null;  // looking off the map entirely
    return { bbox: b, layers, scale: view.scale };
  },
  stale() {
    const cur = this.current;
    if (!cur) return true;
    const want = this.desired();
    if (want.layers.join() !== cur.layers.join()) return true;
    if (!cur.bbox) {  // the whole map: narrow it only once the view is much smaller
      return !!want.bbox && (want.bbox[2] - want.bbox[0]) * (want.bbox[3] - want.bbox[1]) < 0.25 * store.width * store.height;
    }
    const ratio = view.scale / cur.scale;
    if (ratio > 2 || ratio < 0.5) return true;
    const r = view.rect();
    const vx0 = Math.max(0, Math.floor(r.x0)), vy0 = Math.max(0, Math.floor(r.y0));
    const vx1 = Math.min(store.width - 1, Math.ceil(r.x1)), vy1 = Math.min(store.height - 1, Math.ceil(r.y1));
    const [b0, b1, b2, b3] = cur.bbox;
    return vx0 < b0 || vy0 < b1 || vx1 > b2 || vy1 > b3;
  },
  check() {
    if (!ws.ready || !store.width || !this.stale()) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { if (this.stale()) this.send(); }, 200);
  },
  send() {
    if (!ws.ready) return;
    const want = this.desired();
    this.current = want;
    ws.send({ op: 'subscribe', layers: want.layers, bbox: want.bbox, events: null,
      entities: null, components: [], rate: SUB_RATE });
  },
};

const ws = {
  sock: null, ready: false, attempts: 0, retryTimer: 0, state: 'connecting',
  url() {
    return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
  },
  connect() {
    clearTimeout(this.retryTimer);
    this.setState('connecting', 'warn');
    let sock;
    try { sock = new WebSocket(this.url()); } catch (err) { this.retry(String(err)); return; }
    this.sock = sock;
    sock.onopen = () => {
      this.setState('open', 'good');
      // Where reads need the token, the feed takes it as the first message (not the URL).
      const t = token.get();
      if (ui.readsNeedToken && t) sock.send(JSON.stringify({ op: 'auth', token: t }));
    };
    sock.onmessage = (ev) => this.onMessage(ev.data);
    sock.onerror = () => {};  // onclose follows with the reason
    sock.onclose = (ev) => {
      if (this.sock !== sock) return;
      this.ready = false;
      subs.current = null;
      if (ev.code === 4401) {  // the feed needs the token here: ask, then connect again
        ui.readsNeedToken = true;
        token.forget();
        token.ask('Watching this world needs its access token.').then(() => this.retry('the access token is needed'));
        return;
      }
      this.retry(ev.reason || (ev.code === 1006 ? 'connection lost' : `closed (${ev.code})`));
    };
  },
  retry(reason) {
    const delay = Math.min(10, 2 ** this.attempts);
    this.attempts++;
    let left = delay;
    const tickDown = () => {
      this.setState(`${reason}; retry in ${left} s`, 'bad');
      if (left-- <= 0) { this.connect(); return; }
      this.retryTimer = setTimeout(tickDown, 1000);
    };
    tickDown();
  },
  send(obj) {
    if (this.sock && this.sock.readyState === WebSocket.OPEN) this.sock.send(JSON.stringify(obj));
  },
  setState(text, cls) {
    this.state = text;
    const el = $('status-ws');
    el.textContent = `ws: ${text}`;
    el.title = text;
    el.className = `pill ${cls || ''}`;
  },
  onMessage(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    switch (msg.t) {
      case 'hello':
        this.ready = true;
        this.client = isInt(msg.client) ? msg.client : null;
        if (msg.tick < store.tick) {  // a restarted world (or a replay that went back): old events mislead
          store.events.length = 0; store.eventKeys.clear(); events.changed();
        }
        store.world = msg.world;
        status.applyReadOnly(!!msg.read_only);
        status.applyReplay(!!msg.replay);
        {
          const other = terrain.canvas && (terrain.canvas.width !== msg.map.width || terrain.canvas.height !== msg.map.height);
          ensureTerrain(other).then(() => subs.send()).catch(() => {});
        }
        setTick(msg.tick);
        break;
      case 'key':
        this.attempts = 0;
        this.setState('live', 'good');
        store.applyKey(msg);
        store.frames++;
        setTick(msg.tick);
        requestRender();
        link.apply();
        break;
      case 'delta':
        motion.frameArrived(performance.now());
        store.applyDelta(msg);
        if (msg.events) { eventsOnMap(msg.events, performance.now()); timeline.add(msg.events); }
        store.frames++;
        setTick(msg.tick);
        if (msg.events && events.scope === 'view' && store.addEvents(msg.events)) events.changed();
        if (msg.agents || msg.items || msg.objects || msg.events) requestRender();
        if (msg.events_dropped) events.dropped += msg.events_dropped;
        break;
      case 'error':
        logLine(`error: live feed: ${msg.message}`, 'err');
        break;
      default: break;  // pong and anything newer
    }
  },
};

// -- inspector ----------------------------------------------------------------------------

// Half the width the inspector covers, when the map is wide enough to spare it.
function inspectorOffset() {
  const el = $('inspector');
  const covered = el.offsetLeft + el.offsetWidth;
  return view.w - covered > 320 ? Math.round(covered / 2) : 0;
}

const inspector = {
  id: null, detail: null, gone: false, follow: false, timer: 0, inFlight: false,
  open(id) {
    if (this.id !== id) { this.detail = null; this.gone = false; }
    this.id = id;
    $('inspector').hidden = false;
    view.setOffset(inspectorOffset());
    const rec = store.agents.get(id);
    $('inspector-name').textContent = rec ? rec[5] : (store.nameOf(id) || `#${id}`);
    this.showGone(false);
    if (!this.detail) $('inspector-body').innerHTML = '<div class="none">loading…</div>';
    clearInterval(this.timer);
    this.timer = setInterval(() => this.poll(), 500);
    this.poll();
    chat.selected(id);
    controls.selectionChanged();
    requestRender();
  },
  close() {
    clearInterval(this.timer);
    this.id = null; this.detail = null; this.gone = false;
    setFollow(false);
    link.update();
    $('inspector').hidden = true;
    view.setOffset(0);
    controls.selectionChanged();
    scoreboard.markSelected();
    requestRender();
  },
  async poll() {
    if (this.id == null || this.inFlight || document.hidden) return;
    const id = this.id;
    this.inFlight = true;
    try {
      const d = await api.get(`/api/agents/${id}`);
      if (this.id !== id) return;
      this.detail = d;
      this.showGone(false);
      this.render();
    } catch (err) {
      if (this.id !== id) return;
      if (err.status === 404) {
        this.showGone(true);
        clearInterval(this.timer);  // the dead do not come back: stop asking
      }
    } finally {
      this.inFlight = false;
    }
  },
  showGone(gone) {
    this.gone = gone;
    $('inspector-gone').hidden = !gone;
    $('inspector').classList.toggle('gone', gone);
    controls.selectionChanged();
  },
  render() {
    const d = this.detail;
    if (!d) return;
    $('inspector-name').textContent = d.name;
    chat.fromEvents(d.recent_events || []);
    play.showButton(d);
    const body = $('inspector-body');
    const scroll = body.scrollTop;
    const n = d.needs || {};
    const bar = (label, v, max, color, text) => `<div class="bar"><span>${label}</span>` +
      `<div class="track"><div class="fill" style="width:${clamp(100 * v / (max || 100), 0, 100)}%;background:${color}"></div></div>` +
      `<span class="val">${text}</span></div>`;
    const ent = (id, name) => (isInt(id) && id !== NO_ONE
      ? `<a class="ent" data-id="${id}">${esc(name || store.nameOf(id) || '#' + id)}</a>` : esc(name ?? '–'));
    const list = (items, fn, empty = 'none') => (items && items.length
      ? `<ul>${items.map(fn).join('')}</ul>` : `<div class="none">${empty}</div>`);
    const act = (a) => (a ? `${esc(a.name)} ${esc(Object.entries(a.args || {}).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' '))}` : 'idle');
    const sec = (title, html) => `<div class="insp-sec"><h3>${title}</h3>${html}</div>`;
    const inv = d.inventory || { gold: 0, items: {} };
    const hunger = n.hunger ?? 0, energy = n.energy ?? 0;
    let html = `<div><span class="badge" style="background:${PERSONALITY_COLORS[d.personality] || OTHER_COLOR}">${esc(d.personality)}</span>` +
      `<span class="badge" style="background:${BRAIN_COLORS[String(d.brain).split(':')[0]] || OTHER_COLOR}">${esc(d.brain)}</span>` +
      (d.team ? `<span class="badge" style="background:${teamColor(d.team)}">team ${esc(d.team)}</span>` : '') +
      `<span class="muted">#${d.id} · (${d.x}, ${d.y}) ${esc(d.tile)} · age ${d.age} · kills ${d.kills}</span></div>`;
    html += sec('needs',
      bar('health', n.health, n.max_health, hpColor(100 * n.health / (n.max_health || 100)), `${fmt(n.health, 1)}/${fmt(n.max_health, 0)}`) +
      bar('hunger', hunger, 100, hunger > 70 ? '#ef5b5b' : hunger > 40 ? '#f5b041' : '#46c46e', fmt(hunger, 1)) +
      bar('energy', energy, 100, energy < 25 ? '#ef5b5b' : energy < 50 ? '#f5b041' : '#5aa9ff', fmt(energy, 1)));
    const itemList = Object.entries(inv.items || {});
    html += sec('inventory', `<div><b style="color:#ffd700">${inv.gold}</b> gold${itemList.length ? ' · ' + esc(itemList.map(([k, q]) => `${q} ${k}`).join(', ')) : ''}</div>`);
    const thinkingHtml = d.thinking ? '<span class="thinking">thinking… (waiting for the LLM)</span>'
      : `next think at tick ${esc(d.next_think)}${isInt(d.next_think) && d.next_think > d.tick ? ` (in ${d.next_think - d.tick})` : ''}`;
    const walk = d.walking && d.walking.steps ? `${d.walking.steps} steps${d.walking.to ? ` to (${d.walking.to[0]}, ${d.walking.to[1]})` : ''}` : 'no';
    html += sec('doing', `<div class="kv">` +
      `<span>action</span><span class="mono">${act(d.action)}${d.action ? ` <span class="muted">since ${esc(d.action_since)}</span>` : ''}</span>` +
      `<span>last result</span><span>${esc(d.last_result || '–')}</span>` +
      `<span>walking</span><span>${esc(walk)}</span>` +
      `<span>mind</span><span>${d.played_by ? `<b>played by ${esc(d.played_by.player)}</b> since tick ${esc(d.played_by.since)} (its brain is paused)` : thinkingHtml}</span>` +
      `<span>reputation</span><span>${fmt(d.reputation, 3)}</span>` +
      (d.combat && d.combat.last_attacker ? `<span>attacked by</span><span>${ent(d.combat.last_attacker)} at ${esc(d.combat.last_attacked)}</span>` : '') +
      (d.combat && d.combat.defending_until > d.tick ? '<span>defending</span><span>until ' + esc(d.combat.defending_until) + '</span>' : '') +
      `</div>`);
    html += sec(`plan${d.plan_source ? ` <span class="muted">(${esc(d.plan_source)})</span>` : ''}`,
      list(d.plan, (p) => `<li class="mono">${act(p)}</li>`, 'no plan'));
    if (d.llm && d.llm.length) html += sec('last decision (LLM)', `<div class="llm-lines mono">${esc(d.llm.join('\n'))}</div>`);
    html += sec('relationships', list(d.relationships, relationLine));
    const sees = d.sees || {};
    html += sec('sees', `<div>${(sees.agents || []).length ? (sees.agents || []).map((id) => ent(id)).join(', ') : '<span class="none">no agents</span>'}` +
      ` <span class="muted">· ${(sees.items || []).length} items · ${(sees.objects || []).length} objects</span></div>`);
    html += sec('heard', list((d.heard || []).slice(-8).reverse(), (h) => `<li><span class="muted">${esc(h.tick)}</span> ${ent(h.from, h.name)}: “${esc(h.text)}”</li>`, 'nothing'));
    html += sec('memory', list((d.memory || []).slice().reverse(), (m) => `<li><span class="muted">${esc(m.tick)}</span> ${esc(m.line ?? m.text ?? '')}</li>`, 'nothing yet'));
    html += sec('recent events', list((d.recent_events || []).slice().reverse(), (e) => `<li><span class="muted">${esc(e.tick)}</span> ${sentenceHtml(e)}</li>`));
    body.innerHTML = html;
    body.scrollTop = scroll;
  },
};


// -- chat and play ------------------------------------------------------------------------

// The person at this page: a name agents hear (kept in localStorage; a guest name until one
// is given), and the agent they play, if any. Writes go to the play endpoints
// (POST /api/agents/ID/play|release|act|talk), which run the console's own commands.
const PLAYER_KEY = 'agentWorld.player';
const PLAYER_NAME = /^[A-Za-z][A-Za-z0-9_'-]{0,23}$/;
function playerName() {
  const typed = $('player-name').value.trim();
  if (PLAYER_NAME.test(typed)) { localStorage.setItem(PLAYER_KEY, typed); return typed; }
  let kept = localStorage.getItem(PLAYER_KEY);
  if (!kept || !PLAYER_NAME.test(kept)) {
    kept = `guest-${Math.random().toString(36).slice(2, 6)}`;
    localStorage.setItem(PLAYER_KEY, kept);
  }
  $('player-name').value = kept;
  return kept;
}

async function postAgent(id, what, body) {
  let asked = false;
  for (;;) {
    let r;
    try {
      r = await fetch(`/api/agents/${id}/${what}`, { method: 'POST', headers: token.headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(body) });
    } catch (err) {
      return { ok: false, status: 0, reply: [`error: the server did not answer (${err.message})`] };
    }
    let b;
    try { b = await r.json(); } catch { b = { error: `HTTP ${r.status}` }; }
    if (r.status === 401 && !asked) {
      asked = true;
      if (await token.ask('Playing and talking need this world\'s access token.')) continue;
    }
    if (Array.isArray(b.reply)) return { ok: !!b.ok, status: r.status, reply: b.reply, tick: b.tick };
    return { ok: false, status: r.status, reply: [`error: ${b.error || `HTTP ${r.status}`}`] };
  }
}

// The conversation with the selected agent: what people said to it, what it said, and what
// others said to it; from the feed's events and the inspector's recent events.
const CHAT_MAX = 100;
const chat = {
  id: null, lines: [], keys: new Set(),
  selected(id) {
    if (this.id === id) return;
    this.id = id; this.lines = []; this.keys.clear();
    this.render();
  },
  note(text, cls = 'note') {
    this.lines.push({ tick: store.tick, seq: 1e9 + this.lines.length, text, cls });
    this.render();
  },
  fromEvents(list) {
    const id = this.id;
    if (id == null) return;
    let added = 0;
    for (const e of list) {
      if (e.kind && e.kind !== 'event') continue;
      let text = null, cls = 'them';
      if (e.type === 'spoken' && e.to === id) {
        text = `${e.speaker}: ${e.text}`;
        cls = e.speaker === playerName() ? 'me' : 'them';
      } else if (e.type === 'say' && (e.agent === id || e.to === id)) {
        text = `${e.name || store.nameOf(e.agent) || '#' + e.agent}: ${e.text}`;
        cls = e.agent === play.agent ? 'me' : 'them';
      } else if ((e.type === 'played' || e.type === 'released') && e.agent === id) {
        text = e.type === 'played' ? `${e.player} takes control` : `${e.player} gives it back (${e.reason})`;
        cls = 'note';
      } else if (e.type === 'action_failed' && e.agent === id && e.agent === play.agent && e.tick > play.since) {
        text = `could not ${e.action}: ${e.reason}`;
        cls = 'err';
      }
      if (text == null) continue;
      const key = `${e.tick}:${e.seq}:${e.type}`;
      if (this.keys.has(key)) continue;
      this.keys.add(key);
      this.lines.push({ tick: e.tick, seq: e.seq ?? 0, text, cls });
      added++;
    }
    if (!added) return;
    this.lines.sort((a, b) => (a.tick - b.tick) || (a.seq - b.seq));
    if (this.lines.length > CHAT_MAX) this.lines.splice(0, this.lines.length - CHAT_MAX);
    this.render();
  },
  render() {
    const log = $('chat-log');
    log.innerHTML = this.lines.map((l) => `<div class="${l.cls}"><span class="muted">${esc(l.tick)}</span> ${esc(l.text)}</div>`).join('');
    log.scrollTop = log.scrollHeight;
  },
  async send() {
    const id = inspector.id, text = $('chat-text').value.trim();
    if (id == null || !text) return;
    const r = await postAgent(id, 'talk', { player: playerName(), text });
    if (r.ok) $('chat-text').value = '';
    else this.note(r.reply[0] || 'error', 'err');
  },
};

const play = {
  agent: null, detail: null, timer: 0, since: 0,
  init() {
    playerName();
    $('btn-play').onclick = () => { if (inspector.id != null) this.toggle(inspector.id); };
    $('chat-send').onclick = () => chat.send();
    $('chat-text').addEventListener('keydown', (e) => { if (e.key === 'Enter') chat.send(); });
    $('player-name').addEventListener('change', () => playerName());
    $('play-do').onclick = () => this.doIt();
    $('play-release').onclick = () => this.release();
  },
  toggle(id) { return this.agent === id ? this.release() : this.take(id); },
  async take(id) {
    if (this.agent != null && this.agent !== id) await this.release();
    const r = await postAgent(id, 'play', { player: playerName(), client: ws.client ?? undefined });
    if (!r.ok) { chat.note(r.reply[0] || 'error', 'err'); return false; }
    this.agent = id;
    this.since = store.tick;
    $('play-name').textContent = store.nameOf(id) || `#${id}`;
    $('play-bar').hidden = false;
    $('play-result').textContent = '';
    clearInterval(this.timer);
    this.timer = setInterval(() => this.poll(), 1000);
    this.poll();
    this.showButton(inspector.detail);
    requestRender();
    return true;
  },
  async release() {
    const id = this.agent;
    if (id == null) return;
    const r = await postAgent(id, 'release', { player: playerName() });
    if (!r.ok) chat.note(r.reply[0] || 'error', 'err');
    this.stop();
  },
  stop() {
    this.agent = null; this.detail = null;
    clearInterval(this.timer);
    $('play-bar').hidden = true;
    this.showButton(inspector.detail);
    requestRender();
  },
  async act(action, args) {
    if (this.agent == null) return null;
    const r = await postAgent(this.agent, 'act', { player: playerName(), action, args });
    $('play-result').textContent = r.ok ? `${action}…` : (r.reply[0] || 'error');
    $('play-result').className = r.ok ? 'muted' : 'err';
    return r;
  },
  walkTo(x, y) { flash.x = x; flash.y = y; flash.until = performance.now() + 600; return this.act('move_to', { x, y }); },
  // The rest of an order's arguments: KEY=VALUE words; goods as KIND:N[,KIND:N].
  args(text) {
    const out = {};
    for (const word of text.split(/\s+/).filter(Boolean)) {
      const [k, v = ''] = word.split('=');
      if (!k) continue;
      if (/^-?\d+$/.test(v)) out[k] = Number(v);
      else if (k === 'give' || k === 'want') out[k] = Object.fromEntries(v.split(',').map((p) => { const [kind, q] = p.split(':'); return [kind, Number(q)]; }));
      else out[k] = v;
    }
    return out;
  },
  doIt() {
    const action = $('play-action').value;
    const args = this.args($('play-args').value);
    const target = Number($('play-target').value);
    if (['pickup', 'attack', 'trade_offer', 'give', 'steal'].includes(action) || (action === 'use_ability' && !('x' in args))) {
      if (Number.isInteger(target) && target > 0 && !('target' in args)) args.target = target;
    }
    return this.act(action, args);
  },
  async poll() {
    const id = this.agent;
    if (id == null || document.hidden) return;
    let d;
    try { d = await api.get(`/api/agents/${id}`); } catch (err) {
      if (err.status === 404 && this.agent === id) { chat.note('the agent you played is gone'); this.stop(); }
      return;
    }
    if (this.agent !== id) return;
    this.detail = d;
    // Given back (idle, or another page forced it): the page stops playing too.
    if (d.played_by && d.played_by.player !== playerName()) { chat.note(`${d.name} is played by ${d.played_by.player} now`); this.stop(); return; }
    if (!d.played_by && d.tick > this.since + 20) { this.stop(); return; }
    if (d.played_by) this.since = d.tick;
    const sees = d.sees || {};
    const sel = $('play-target'), keep = sel.value;
    const agents = (sees.agents || []).map((a) => `<option value="${a}">${esc(store.nameOf(a) || '#' + a)}</option>`);
    const items = (sees.items || []).map((i) => { const rec = store.items.get(i); return `<option value="${i}">${esc(rec ? `${rec[3]} ${rec[4]}` : 'item')} #${i}</option>`; });
    const pick = inspector.id != null && inspector.id !== id ? [`<option value="${inspector.id}">${esc(store.nameOf(inspector.id) || '#' + inspector.id)} (selected)</option>`] : [];
    sel.innerHTML = [...pick, ...agents, ...items].join('') || '<option value="">nothing in sight</option>';
    if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
    if (d.last_result) $('play-result').textContent = `last: ${d.last_result}`;
  },
  fromEvents(list) {
    if (this.agent == null) return;
    for (const e of list) {
      if (e.type === 'released' && e.agent === this.agent) { chat.note(`${e.name} goes back to its brain (${e.reason})`); this.stop(); return; }
      if (e.type === 'action_failed' && e.agent === this.agent) { $('play-result').textContent = `could not ${e.action}: ${e.reason}`; $('play-result').className = 'err'; }
    }
  },
  showButton(d) {
    const btn = $('btn-play');
    const id = inspector.id;
    const mine = id != null && this.agent === id;
    btn.textContent = mine ? 'Release' : 'Play';
    btn.classList.toggle('armed', mine);
    const other = d && d.id === id && d.played_by && d.played_by.player !== playerName();
    btn.title = other ? `played by ${d.played_by.player}` : mine ? 'give it back to its brain (P)' : 'take control of this agent: its brain pauses (P)';
    btn.disabled = ui.readOnly || ui.replay || id == null || inspector.gone;
    $('chat-send').disabled = ui.readOnly || ui.replay || id == null || inspector.gone;
  },
};

// -- events -------------------------------------------------------------------------------

// An input's own fields are spread over its line, so a field named "kind" (a spawn's)
// replaces kind: "input"; a source outside the world's kinds gives it away.
const isInput = (e) => e.kind === 'input' || (!['event', 'check', 'marker'].includes(e.kind) && e.source != null);

// An event as a sentence: the world log's own (the server sends it as ``line``), with each
// agent named in it ("Asha#7") a link that selects that agent.
const LABEL = /([A-Za-z][\w'-]*)#(\d+)/g;
function sentence(e) {
  if (typeof e.line === 'string') return e.line;
  const rest = Object.entries(e).filter(([k]) => !['tick', 'seq', 'kind', 'type'].includes(k))
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
  return `${e.type}: ${rest}`;
}
function sentenceHtml(e) {
  return esc(sentence(e)).replace(LABEL, (_m, name, id) => `<a class="ent" data-id="${id}">${name}</a>`);
}
// A relationship: the other's name (a link while it lives, "(dead)" after) and the feeling.
function relationLine(r) {
  const name = r.name || store.nameOf(r.id) || `#${r.id}`;
  const who = r.alive === false ? `<span class="dead">${esc(name)} (dead)</span>` : `<a class="ent" data-id="${r.id}">${esc(name)}</a>`;
  const feel = r.value >= 0.5 ? 'likes' : r.value > 0 ? 'warm to' : r.value <= -0.5 ? 'hates' : r.value < 0 ? 'wary of' : 'neutral';
  return `<li>${who} <span class="muted">${feel} (${fmt(r.value, 2)})</span></li>`;
}

// Routine types (the world log's, plus the market's prices and the log's state checks):
// hidden from the events panel until "routine" is ticked.
const ROUTINE = new Set(['pickup', 'harvest', 'eat', 'action_failed', 'trade_offer', 'trade_declined',
  'trade_expired', 'defend', 'use', 'drop', 'census', 'spoiled', 'price', 'state_hash']);

// The agent an event is about: the first entity field that names someone; for a death,
// rather the killer, since the dead one cannot be inspected any more.
function eventAgent(e) {
  const keys = e.type === 'death' ? ['killer', ...ENTITY_KEYS] : ENTITY_KEYS;
  for (const k of keys) if (isInt(e[k]) && e[k] !== NO_ONE) return e[k];
  return null;
}

const events = {
  scope: 'view', paused: false, routine: false, hidden: 0, dropped: 0, timer: 0, shown: [], pollSince: null, pollTimer: 0,
  changed() {
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = 0; this.render(); }, 250);  // coalesce bursts
  },
  syncTypes() {
    const sel = $('event-type');
    const have = new Set(Array.from(sel.options, (o) => o.value));
    const missing = [...store.eventTypes].filter((t) => !have.has(t));
    if (!missing.length) return;
    const cur = sel.value;
    const all = [...new Set([...have, ...store.eventTypes])].filter(Boolean).sort();
    sel.innerHTML = '<option value="">all types</option>' + all.map((t) => `<option>${esc(t)}</option>`).join('');
    sel.value = cur;
  },
  matches(e) {
    const type = $('event-type').value;
    if (type && e.type !== type) return false;
    if (!type && !this.routine && ROUTINE.has(e.type)) { this.hidden++; return false; }
    const who = $('event-agent').value.trim().replace(/^#/, '').toLowerCase();
    if (who) {
      if (/^\d+$/.test(who)) {
        const id = Number(who);
        if (!ENTITY_KEYS.some((k) => e[k] === id)) return false;
      } else {
        const names = [e.name, e.target_name, e.to_name, ...ENTITY_KEYS.map((k) => store.nameOf(e[k]))];
        if (!names.some((x) => x && String(x).toLowerCase().includes(who))) return false;
      }
    }
    const text = $('event-text').value.trim().toLowerCase();
    if (text && !(`${e.type} ${sentence(e)}`.toLowerCase().includes(text))) return false;
    return true;
  },
  render() {
    if (this.paused) return;
    this.syncTypes();
    this.hidden = 0;
    this.shown = store.events.filter((e) => this.matches(e));
    $('event-hidden').textContent = this.routine ? '' : `(${this.hidden} hidden)`;
    const html = this.shown.map((e, i) => {
      const click = isInt(e.x) || eventAgent(e) != null;
      return `<li data-i="${i}" class="t-${esc(e.type)}${isInput(e) ? ' input' : ''}${click ? ' clickable' : ''}">` +
        `<span class="tick">${e.tick}</span><span class="type" title="${esc(e.type)}">${esc(e.type)}</span><span class="text">${sentenceHtml(e)}</span></li>`;
    }).join('');
    $('event-list').innerHTML = html || '<li class="muted">no events yet</li>';
    $('event-count').textContent = `${this.shown.length}/${store.events.length}${this.dropped ? ` · ${this.dropped} dropped` : ''}`;
  },
  click(i) {
    const e = this.shown[i];
    if (!e) return;
    // Select first: opening the inspector moves the focus point the event is centred on.
    const id = eventAgent(e);
    if (id != null) selectAgent(id, { centre: !isInt(e.x) });
    if (isInt(e.x) && isInt(e.y)) {
      if (inspector.follow) setFollow(false);
      view.centreOn(e.x, e.y, view.scale < 4 ? 10 : undefined);
      flash.x = e.x; flash.y = e.y; flash.until = performance.now() + 1500;
      requestRender();
    }
  },
  // "whole map" polls the API, since the socket sends only the events of the subscribed area.
  async poll() {
    if (this.scope !== 'all' || document.hidden) return;
    if (this.pollSince == null) this.pollSince = Math.max(0, store.tick - 200);
    try {
      const r = await api.get(`/api/events?since_tick=${this.pollSince}&limit=${MAX_EVENTS}`);
      const evs = r.events || [];
      if (evs.length) this.pollSince = evs[evs.length - 1].tick;
      if (r.truncated) this.pollSince = Math.max(this.pollSince, store.tick - 5);  // too many: skip ahead
      if (store.addEvents(evs)) this.changed();
    } catch { /* the status bar shows a dead server */ }
  },
  setScope(scope) {
    this.scope = scope;
    this.pollSince = null;
    clearInterval(this.pollTimer);
    if (scope === 'all') { this.poll(); this.pollTimer = setInterval(() => this.poll(), 1000); }
  },
  async prefill() {
    try {
      const r = await api.get(`/api/events?since_tick=${Math.max(0, store.tick - 150)}&limit=${MAX_EVENTS}`);
      timeline.add(r.events || []);
      if (store.addEvents(r.events || [])) this.changed();
    } catch { /* not fatal: the socket fills the feed */ }
  },
};

// -- scoreboard ---------------------------------------------------------------------------

const scoreboard = {
  rows: [],
  async refresh() {
    if (document.hidden || $('panel-scoreboard').classList.contains('collapsed')) return;
    const sort = $('score-sort').value;
    try {
      const r = await api.get(`/api/agents?sort=${encodeURIComponent(sort)}&limit=15`);
      this.rows = r.agents || [];
      for (const a of this.rows) store.names.set(a.id, a.name);
      $('score-col').textContent = sort;
      $('scoreboard').tBodies[0].innerHTML = this.rows.map((a, i) =>
        `<tr data-id="${a.id}"><td class="num">${i + 1}</td>` +
        `<td><span class="dot" style="background:${agentColor(a.personality, a.brain, a.team)}"></span>${esc(a.name)}</td>` +
        `<td class="muted">${esc(a.personality)}${a.brain === 'llm' ? ' · llm' : ''}</td>` +
        `<td class="num">${fmt(a[sort], 1)}</td><td class="num">${fmt(a.health, 0)}</td></tr>`).join('') ||
        '<tr><td colspan="5" class="muted">no agents</td></tr>';
      this.markSelected();
    } catch { /* keep the last table */ }
  },
  markSelected() {
    for (const tr of $('scoreboard').tBodies[0].rows) tr.classList.toggle('selected', Number(tr.dataset.id) === inspector.id);
  },
};

// -- charts -------------------------------------------------------------------------------

const charts = {
  data: null,
  async refresh() {
    if (document.hidden || $('panel-charts').classList.contains('collapsed')) return;
    try {
      this.data = await api.get('/api/metrics');
      this.draw();
    } catch (err) {
      $('chart-info').textContent = err.message;
    }
  },
  draw() {
    const m = this.data;
    if (!m) return;
    const s = m.series || {};
    $('chart-info').textContent = `every ${m.interval_ticks} ticks · ${m.ticks.length} samples`;
    drawChart($('chart-pop'), m.ticks, Object.keys(PERSONALITY_COLORS).map((p) =>
      ({ name: p, color: PERSONALITY_COLORS[p], values: s[`agents.${p}`] || [] })), { zero: true, digits: 0 });
    drawChart($('chart-gini'), m.ticks, [{ name: 'gini', color: '#ffd700', values: s.gold_gini || [] }], { zero: true, max1: true, digits: 3 });
    const prices = Object.keys(s).filter((k) => k.startsWith('price.')).sort();
    drawChart($('chart-prices'), m.ticks, prices.map((k, i) =>
      ({ name: k.slice(6), color: PALETTE[i % PALETTE.length], values: s[k] })), { log: true, digits: 1 });
    drawChart($('chart-tick'), m.ticks, [
      { name: 'p50', color: '#5aa9ff', values: s.tick_ms_p50 || [] },
      { name: 'p99', color: '#ff6b6b', values: s.tick_ms_p99 || [] }], { zero: true, digits: 2 });
  },
};

// A small line chart: legend with the latest values on top, min/max on the left, first and
// last tick below. Nulls break a line (the series did not exist then).
function drawChart(cv, ticks, series, opt = {}) {
  const dpr = window.devicePixelRatio || 1;
  const cw = cv.clientWidth || 360, chh = cv.clientHeight || 110;
  if (cv.width !== Math.round(cw * dpr)) cv.width = Math.round(cw * dpr);
  if (cv.height !== Math.round(chh * dpr)) cv.height = Math.round(chh * dpr);
  const c = cv.getContext('2d');
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.clearRect(0, 0, cw, chh);
  c.font = '10px system-ui, sans-serif';
  c.textBaseline = 'top';
  // legend rows
  let lx = 4, ly = 3;
  for (const s of series) {
    const last = [...s.values].reverse().find((v) => v != null);
    const label = `${s.name} ${last != null ? fmt(last, opt.digits ?? 2) : '–'}`;
    const w = c.measureText(label).width + 14;
    if (lx + w > cw - 4 && lx > 4) { lx = 4; ly += 12; }
    c.fillStyle = s.color; c.fillRect(lx, ly + 3, 8, 3);
    c.fillStyle = '#aab3bf'; c.fillText(label, lx + 10, ly);
    lx += w;
  }
  const top = ly + 16, left = 34, right = cw - 6, bottom = chh - 13;
  if (!ticks.length || bottom - top < 10) {
    c.fillStyle = '#8a94a3'; c.fillText('no samples yet', left, top + 4);
    return;
  }
  const tf = opt.log ? (v) => Math.log(Math.max(v, 1e-6)) : (v) => v;
  let lo = Infinity, hi = -Infinity;
  for (const s of series) for (const v of s.values) if (v != null) { const t = tf(v); if (t < lo) lo = t; if (t > hi) hi = t; }
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  if (opt.zero && !opt.log) lo = Math.min(0, lo);
  if (opt.max1) hi = Math.max(hi, Math.min(1, hi * 1.2 || 1));
  if (hi - lo < 1e-9) { hi += 1; if (!opt.zero) lo -= 1; }
  const t0 = ticks[0], t1 = ticks[ticks.length - 1];
  const X = (t) => left + (t1 === t0 ? 0.5 : (t - t0) / (t1 - t0)) * (right - left);
  const Y = (v) => bottom - (tf(v) - lo) / (hi - lo) * (bottom - top);
  c.strokeStyle = '#2a313b'; c.lineWidth = 1;
  c.beginPath(); c.moveTo(left, top); c.lineTo(left, bottom); c.lineTo(right, bottom); c.stroke();
  c.fillStyle = '#8a94a3';
  const inv = opt.log ? (t) => Math.exp(t) : (t) => t;
  c.textAlign = 'right';
  c.fillText(fmt(+inv(hi).toPrecision(3), opt.digits ?? 2), left - 3, top - 2);
  c.fillText(fmt(+inv(lo).toPrecision(3), opt.digits ?? 2), left - 3, bottom - 9);
  c.textAlign = 'left'; c.fillText(String(t0), left, bottom + 2);
  c.textAlign = 'right'; c.fillText(String(t1), right, bottom + 2);
  c.textAlign = 'left';
  c.lineWidth = 1.5; c.lineJoin = 'round';
  for (const s of series) {
    c.strokeStyle = s.color;
    c.beginPath();
    let pen = false;
    for (let i = 0; i < ticks.length; i++) {
      const v = s.values[i];
      if (v == null) { pen = false; continue; }
      const x = X(ticks[i]), y = Y(v);
      if (pen) c.lineTo(x, y); else { c.moveTo(x, y); pen = true; }
    }
    if (ticks.length === 1 && s.values[0] != null) c.arc(X(ticks[0]), Y(s.values[0]), 1.5, 0, Math.PI * 2);
    c.stroke();
  }
}

// -- controls -----------------------------------------------------------------------------

function logLine(text, cls = 'ok') {
  const log = $('command-log');
  const div = document.createElement('div');
  div.className = cls;
  div.textContent = text;
  log.appendChild(div);
  while (log.childElementCount > 200) log.firstElementChild.remove();
  log.scrollTop = log.scrollHeight;
}

async function runCommand(line) {
  logLine(`> ${line}`, 'cmd');
  const r = await api.command(line);
  for (const l of r.reply.length ? r.reply : [r.ok ? 'ok' : 'error: no reply']) {
    logLine(l, !r.ok || /^error\b/i.test(l) ? 'err' : 'ok');
  }
  status.refresh();
  return r;
}

const controls = {
  selectionChanged() {
    const id = inspector.id;
    const live = id != null && !inspector.gone;
    $('selected-label').textContent = id == null ? 'none' : `${store.nameOf(id) || ''} #${id}${inspector.gone ? ' (gone)' : ''}`;
    // A recording changes only as it was recorded: the server refuses these, so they are off.
    const refuse = ui.readOnly || ui.replay;
    $('btn-kill').disabled = !live || refuse;
    $('btn-give').disabled = !live || refuse;
    for (const el of ['btn-spawn', 'spawn-name', 'btn-ability', 'ability-text']) $(el).disabled = refuse;
  },
  setPicking(on) {
    ui.picking = on && !ui.readOnly && !ui.replay;
    $('pick-banner').hidden = !ui.picking;
    $('btn-spawn').classList.toggle('armed', ui.picking);
    canvas.classList.toggle('picking', ui.picking);
    requestRender();
  },
  init() {
    $('give-item').innerHTML = ITEMS.map((k) => `<option>${k}</option>`).join('');
    $('btn-pause').onclick = () => runCommand('/pause');
    $('btn-resume').onclick = () => runCommand('/resume');
    $('btn-step').onclick = () => runCommand(`/step ${Math.max(1, Math.floor(Number($('step-n').value) || 1))}`);
    $('btn-speed').onclick = () => runCommand(`/speed ${Number($('speed-hz').value) || 1}`);
    $('speed-hz').addEventListener('keydown', (e) => { if (e.key === 'Enter') $('btn-speed').click(); });
    $('step-n').addEventListener('keydown', (e) => { if (e.key === 'Enter') $('btn-step').click(); });
    $('btn-spawn').onclick = () => this.setPicking(!ui.picking);
    $('btn-pick-cancel').onclick = () => this.setPicking(false);
    $('btn-kill').onclick = () => { if (inspector.id != null) runCommand(`/kill ${inspector.id}`); };
    $('btn-give').onclick = () => {
      if (inspector.id == null) return;
      const qty = Math.max(1, Math.floor(Number($('give-qty').value) || 1));
      runCommand(`/give ${inspector.id} ${$('give-item').value} ${qty}`).then(() => inspector.poll());
    };
    const ask = () => {
      const text = $('ability-text').value.trim();
      if (!text) { logLine('error: describe the ability first', 'err'); return; }
      runCommand(`/ability ${shQuote(text)}`).then((r) => { if (r.ok) $('ability-text').value = ''; });
    };
    $('btn-ability').onclick = ask;
    $('ability-text').addEventListener('keydown', (e) => { if (e.key === 'Enter') ask(); });
    this.selectionChanged();
  },
  spawnAt(tx, ty) {
    this.setPicking(false);
    const name = $('spawn-name').value.trim();
    runCommand(`/spawn agent ${name ? shQuote(name) + ' ' : ''}${tx} ${ty}`);
  },
};

// -- status -------------------------------------------------------------------------------

function setTick(t) {
  if (!isInt(t)) return;
  store.tick = t;
  $('status-tick').textContent = String(t);
}

const status = {
  last: null, failures: 0,
  async refresh() {
    try {
      const s = await api.get('/api/state');
      this.failures = 0;
      this.last = s;
      store.world = s.world;
      $('status-world').textContent = `${s.replay ? 'replay of ' : ''}${s.world} · seed ${s.seed} · ${s.map.width}×${s.map.height}`;
      document.title = `${s.world}${s.replay ? ' (replay)' : ''} · Agent World`;
      ui.hearing = s.hearing_radius || 0;
      setTick(s.tick);
      const el = $('status-state');
      const held = s.held_by && s.held_by.length ? ` (held by ${s.held_by.join(', ')})` : '';
      el.textContent = s.running ? 'running' : s.paused ? 'paused' : 'stopped';
      el.title = `${el.textContent}${held}`;
      el.className = `pill ${s.running ? 'good' : 'warn'}`;
      $('status-speed').textContent = fmt(s.speed_hz, 2);
      if (document.activeElement !== $('speed-hz')) $('speed-hz').value = s.speed_hz;
      $('status-agents').textContent = String(s.agents_alive);
      $('status-tickms').textContent = `${fmt(s.tick_ms.p50, 2)} / ${fmt(s.tick_ms.p99, 2)}`;
      $('status-tickms').parentElement.title = `tick time p50 / p99 (ms); ${s.overruns} overruns`;
      $('status-llm').textContent = s.llm;
      $('status-llm').title = s.llm;
      this.applyReadOnly(!!s.read_only);
      this.applyReplay(!!s.replay);
      replay.update(s.replay);
      timeline.loadReplay(s.replay);
    } catch (err) {
      this.failures++;
      const el = $('status-state');
      el.textContent = 'no server';
      el.title = err.message;
      el.className = 'pill bad';
    }
  },
  applyReplay(on) {
    if (on === ui.replay) return;
    ui.replay = on;
    $('replay-note').hidden = !on;
    if (on) controls.setPicking(false);
    controls.selectionChanged();
  },
  applyReadOnly(ro) {
    if (ro === ui.readOnly && $('read-only-note').hidden === !ro) return;
    ui.readOnly = ro;
    $('write-controls').hidden = ro;
    $('read-only-note').hidden = !ro;
    if (ro) controls.setPicking(false);
    controls.selectionChanged();
  },
};

// -- replay -------------------------------------------------------------------------------

// A timeline for served replays; the server may not offer one yet, so everything is guarded.
const replay = {
  dragging: false,
  update(r) {
    const bar = $('replay-bar');
    const on = !!r && typeof r === 'object';
    bar.hidden = !on;
    document.body.classList.toggle('replaying', on);
    if (!on) return;
    const first = r.first_tick ?? 0, last = r.last_tick ?? r.tick ?? 0;
    const sl = $('replay-slider');
    sl.min = first; sl.max = last;
    if (!this.dragging) sl.value = r.tick ?? first;
    $('replay-first').textContent = first;
    $('replay-last').textContent = last;
    $('replay-tick').textContent = `tick ${r.tick ?? '?'}${r.playing ? ' ▶' : ''}`;
    if (document.activeElement !== $('replay-speed') && r.speed != null) $('replay-speed').value = r.speed;
    $('replay-index').textContent = r.diverged || r.index_note
      || (r.indexed_to != null ? `indexed to ${r.indexed_to}` : 'indexing…');
  },
  init() {
    const sl = $('replay-slider');
    sl.addEventListener('input', () => { this.dragging = true; $('replay-tick').textContent = `seek ${sl.value}`; });
    sl.addEventListener('change', () => { this.dragging = false; runCommand(`/seek ${sl.value}`); });
    $('replay-play').onclick = () => runCommand('/play');
    $('replay-pause').onclick = () => runCommand('/pause');
    $('replay-speed').addEventListener('change', () => runCommand(`/speed ${Number($('replay-speed').value) || 1}`));
    $('replay-step').onclick = () => runCommand('/step 1');
    $('replay-fork').onclick = () => {
      const name = window.prompt('Continue from this tick as a new world named:');
      if (name) runCommand(`/fork ${name.trim()}`);
    };
  },
};

// -- selection ----------------------------------------------------------------------------

function selectAgent(id, opts = {}) {
  id = Number(id);
  if (!Number.isInteger(id)) return null;
  inspector.open(id);
  link.update();
  scoreboard.markSelected();
  if (opts.centre) {
    const rec = store.agents.get(id);
    const pos = rec ? [rec[1], rec[2]] : opts.at;
    if (pos) view.centreOn(pos[0], pos[1], view.scale < 4 ? 10 : undefined);
  }
  return id;
}

function selectAt(px, py) {
  const a = agentNear(px, py);
  if (!a) return null;
  return selectAgent(a[0]);
}

function screenOf(id) {
  const a = store.agents.get(Number(id));
  if (!a) return null;
  const [x, y] = view.toScreen(a[1] + 0.5, a[2] + 0.5);
  return { x, y };
}

// The colour an agent is painted in, as [r, g, b] (a browser test reads it back from the
// canvas' pixels to know agents are really drawn).
function colourOf(id) {
  const a = store.agents.get(Number(id));
  if (!a) return null;
  const hex = agentColor(a[6], a[7], a[8]);
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

function setFollow(on) {
  inspector.follow = on;
  $('inspector-follow').checked = on;
  if (on) requestRender();
}

// -- timeline -----------------------------------------------------------------------------

// Notable events along the ticks: deaths, fights, thefts, trades, casts, the angel's work and
// arrivals. Live, the last LIVE_SPAN ticks (a click centres on where it happened); in a
// replay, the whole recording (a click seeks there). Each kind can be switched off.
const LIVE_SPAN = 3000;
const MARKS = {
  death: { types: ['death'], color: '#ffffff', label: 'deaths' },
  fight: { types: ['attack', 'theft'], color: '#D55E00', label: 'fights' },
  trade: { types: ['trade', 'gift'], color: '#F0E442', label: 'trades' },
  cast: { types: ['ability'], color: '#56B4E9', label: 'casts' },
  angel: { types: ['ability_accepted', 'ability_refused', 'ability_requested'], color: '#CC79A7', label: 'angel' },
  arrival: { types: ['spawn'], color: '#009E73', label: 'arrivals' },
};
const MARK_OF = {};
for (const [k, m] of Object.entries(MARKS)) for (const t of m.types) MARK_OF[t] = k;

const timeline = {
  marks: [], keys: new Set(), off: new Set(), loadedReplay: null,
  add(list) {
    let added = 0;
    for (const e of list) {
      const kind = MARK_OF[e.type];
      if (!kind || (e.kind && e.kind !== 'event')) continue;
      const key = `${e.tick}:${e.seq}:${e.type}`;
      if (this.keys.has(key)) continue;
      this.keys.add(key);
      this.marks.push({ key, tick: e.tick, kind, x: e.x, y: e.y, agent: eventAgent(e) });
      added++;
    }
    if (this.marks.length > 20000) {
      for (const m of this.marks.splice(0, this.marks.length - 20000)) this.keys.delete(m.key);
    }
    if (added) this.changed();
  },
  changed() { if (!this.timer) this.timer = setTimeout(() => { this.timer = 0; this.draw(); }, 300); },
  range() {
    const r = status.last && status.last.replay;
    if (r) return [r.first_tick ?? 0, Math.max((r.last_tick ?? 0), (r.first_tick ?? 0) + 1)];
    return [Math.max(0, store.tick - LIVE_SPAN), Math.max(store.tick, 1)];
  },
  // A replay's notable events come from its event log, once.
  async loadReplay(r) {
    if (!r || this.loadedReplay === r.world) return;
    this.loadedReplay = r.world;
    const types = Object.values(MARKS).flatMap((m) => m.types).join(',');
    try {
      const got = await api.get(`/api/events?type=${types}&since_tick=${r.first_tick ?? 0}&until_tick=${r.last_tick ?? 0}&limit=20000`);
      this.add(got.events || []);
    } catch { /* the marks the feed brings still show */ }
  },
  draw() {
    const cv = $('timeline');
    const dpr = window.devicePixelRatio || 1, W = cv.clientWidth || 300, H = cv.clientHeight || 26;
    if (cv.width !== Math.round(W * dpr)) cv.width = Math.round(W * dpr);
    if (cv.height !== Math.round(H * dpr)) cv.height = Math.round(H * dpr);
    const c = cv.getContext('2d');
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, W, H);
    const [t0, t1] = this.range();
    const X = (t) => 4 + (t - t0) / (t1 - t0) * (W - 8);
    const rows = Object.keys(MARKS), rowH = (H - 4) / rows.length;
    let shown = 0;
    for (const m of this.marks) {
      if (m.tick < t0 || m.tick > t1 || this.off.has(m.kind)) continue;
      c.fillStyle = MARKS[m.kind].color;
      c.fillRect(Math.round(X(m.tick)), 2 + rows.indexOf(m.kind) * rowH, 2, Math.max(2, rowH - 1));
      shown++;
    }
    c.fillStyle = '#ffe066';
    c.fillRect(Math.round(X(store.tick)) - 1, 0, 2, H);
    cv.dataset.marks = String(shown);
  },
  click(ev) {
    const cv = $('timeline'), b = cv.getBoundingClientRect();
    const [t0, t1] = this.range();
    const tick = Math.round(t0 + (ev.clientX - b.left - 4) / (b.width - 8) * (t1 - t0));
    if (status.last && status.last.replay) { runCommand(`/seek ${clamp(tick, t0, t1)}`); return; }
    let best = null;
    for (const m of this.marks) {
      if (this.off.has(m.kind) || !isInt(m.x)) continue;
      if (!best || Math.abs(m.tick - tick) < Math.abs(best.tick - tick)) best = m;
    }
    if (!best) return;
    if (inspector.follow) setFollow(false);
    if (best.agent != null && store.agents.get(best.agent)) selectAgent(best.agent);
    view.centreOn(best.x, best.y, view.scale < 4 ? 10 : undefined);
    flash.x = best.x; flash.y = best.y; flash.until = performance.now() + 1500;
    requestRender();
  },
  init() {
    $('timeline-filters').innerHTML = Object.entries(MARKS).map(([k, m]) =>
      `<label><input type="checkbox" data-mark="${k}" checked><i style="background:${m.color}"></i>${m.label}</label>`).join('');
    $('timeline-filters').addEventListener('change', (e) => {
      const k = e.target.dataset.mark;
      if (e.target.checked) this.off.delete(k); else this.off.add(k);
      this.draw();
    });
    $('timeline').addEventListener('click', (e) => this.click(e));
    setInterval(() => this.draw(), 1000);
  },
};

// -- find and link ------------------------------------------------------------------------

// Find an agent by name (the box above the map): select it, centre on it and follow it.
const finder = {
  async find(text) {
    const want = text.trim().replace(/^#/, '').toLowerCase();
    if (!want) return;
    let id = /^\d+$/.test(want) ? Number(want) : null;
    if (id == null) {
      for (const a of store.agents.byId.values()) if (a[5].toLowerCase() === want) { id = a[0]; break; }
    }
    let at = null;
    if (id == null || !store.agents.get(id)) {
      try {
        const r = await api.get('/api/agents?sort=name&limit=100000');
        const hit = r.agents.find((a) => a.id === id) || r.agents.find((a) => a.name.toLowerCase() === want)
          || r.agents.find((a) => a.name.toLowerCase().startsWith(want));
        if (hit) { id = hit.id; at = [hit.x, hit.y]; }
      } catch { /* fall through: not found */ }
    }
    if (id == null) { logLine(`error: no living agent is called ${text.trim()}`, 'err'); return; }
    selectAgent(id, { centre: true, at });
    setFollow(true);
  },
  init() {
    $('find-agent').addEventListener('keydown', (e) => { if (e.key === 'Enter') this.find(e.target.value); });
    $('find-agent').addEventListener('focus', () => {
      $('agent-names').innerHTML = [...store.agents.byId.values()].slice(0, 500).map((a) => `<option value="${esc(a[5])}">`).join('');
    });
  },
};

// A shareable address: #agent=ID opens the viewer on that agent (followed); #tick=N opens a
// replay at that tick (live, it centres on nothing and is ignored).
const link = {
  applied: false,
  update() {
    const id = inspector.id;
    const hash = id != null ? `#agent=${id}` : '';
    if (location.hash !== hash) history.replaceState(null, '', location.pathname + location.search + hash);
  },
  async apply() {
    if (this.applied) return;
    this.applied = true;
    const params = new URLSearchParams(location.hash.slice(1));
    const tick = Number(params.get('tick'));
    if (params.has('tick') && Number.isInteger(tick) && status.last && status.last.replay) await runCommand(`/seek ${tick}`);
    const id = Number(params.get('agent'));
    if (params.has('agent') && Number.isInteger(id)) {
      const rec = store.agents.get(id);
      if (rec) selectAgent(id, { centre: true }); else await finder.find(String(id));
      setFollow(true);
    }
  },
};

// -- input --------------------------------------------------------------------------------

const hover = { tile: null };
function initInput() {
  let drag = null;
  const pos = (e) => { const b = canvas.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; };
  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    canvas.setPointerCapture(e.pointerId);
    const [x, y] = pos(e);
    drag = { x, y, sx: x, sy: y, moved: false };
  });
  canvas.addEventListener('pointermove', (e) => {
    const [x, y] = pos(e);
    if (drag) {
      if (!drag.moved && Math.hypot(x - drag.sx, y - drag.sy) > 4) {
        drag.moved = true;
        canvas.classList.add('dragging');
        if (inspector.follow) setFollow(false);  // dragging means the user wants to look elsewhere
      }
      if (drag.moved) { view.panBy(x - drag.x, y - drag.y); drag.x = x; drag.y = y; }
    }
    updateHover(x, y);
  });
  const end = (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    canvas.classList.remove('dragging');
    if (d.moved || e.type === 'pointercancel') return;
    const [x, y] = pos(e);
    if (ui.picking) {
      const [tx, ty] = view.toTile(x, y);
      controls.spawnAt(Math.floor(tx), Math.floor(ty));
      return;
    }
    if (selectAt(x, y) == null && play.agent != null) {
      const [tx, ty] = view.toTile(x, y);
      play.walkTo(Math.floor(tx), Math.floor(ty));
    }
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);
  canvas.addEventListener('pointerleave', () => { $('hover-tip').hidden = true; hover.tile = null; updateZoomInfo(); });
  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const [x, y] = pos(e);
    const dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
    view.zoomAt(inspector.follow ? view.fx() : x, inspector.follow ? view.h / 2 : y, Math.exp(-dy * 0.0015));
  }, { passive: false });

  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) {
      if (e.key === 'Escape') t.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const step = (e.shiftKey ? 0.5 : 0.15) * Math.min(view.w, view.h);
    switch (e.key) {
      case '+': case '=': view.zoomAt(view.fx(), view.h / 2, 1.25); break;
      case '-': case '_': view.zoomAt(view.fx(), view.h / 2, 0.8); break;
      case 'ArrowLeft': view.panBy(step, 0); setFollow(false); break;
      case 'ArrowRight': view.panBy(-step, 0); setFollow(false); break;
      case 'ArrowUp': view.panBy(0, step); setFollow(false); break;
      case 'ArrowDown': view.panBy(0, -step); setFollow(false); break;
      case 'Home': case '0': view.fit(); break;
      case 'f': if (inspector.id != null) setFollow(!inspector.follow); break;
      case 'p': if (inspector.id != null) play.toggle(inspector.id); break;
      case 'Escape':
        if (ui.picking) controls.setPicking(false);
        else if (inspector.id != null) inspector.close();
        break;
      default: return;
    }
    e.preventDefault();
  });
}

function updateHover(x, y) {
  const [tx, ty] = view.toTile(x, y);
  const tile = [Math.floor(tx), Math.floor(ty)];
  const moved = !hover.tile || hover.tile[0] !== tile[0] || hover.tile[1] !== tile[1];
  hover.tile = tile;
  const tip = $('hover-tip');
  const a = ui.picking ? null : agentNear(x, y);
  if (ui.picking) {
    tip.textContent = `spawn at ${tile[0]}, ${tile[1]} (${terrainAt(tile[0], tile[1]) ?? 'off the map'})`;
  } else if (a) {
    tip.innerHTML = `<b>${esc(a[5])}</b> #${a[0]} · ${esc(a[6])} · ${esc(a[7])} · ${a[3]}% hp` +
      `${a[4] & THINKING ? ' · <i>thinking…</i>' : ''}${a[4] & DEFENDING ? ' · defending' : ''}${a[4] & PLAYED ? ' · <b>played</b>' : ''}`;
  }
  tip.hidden = !(a || ui.picking);
  if (!tip.hidden) {
    tip.style.left = `${Math.min(x + 14, view.w - tip.offsetWidth - 4)}px`;
    tip.style.top = `${Math.min(y + 14, view.h - tip.offsetHeight - 4)}px`;
  }
  if (moved) { if (ui.picking) requestRender(); else updateZoomInfo(); }
}

// -- boot ---------------------------------------------------------------------------------

function initPanels() {
  const saved = JSON.parse(localStorage.getItem('agentWorld.collapsed') || '{}');
  for (const panel of document.querySelectorAll('.panel')) {
    const name = panel.dataset.panel;
    if (saved[name]) panel.classList.add('collapsed');
    panel.querySelector('.toggle').addEventListener('click', () => {
      panel.classList.toggle('collapsed');
      saved[name] = panel.classList.contains('collapsed');
      localStorage.setItem('agentWorld.collapsed', JSON.stringify(saved));
      if (!saved[name] && name === 'charts') charts.refresh();
      if (!saved[name] && name === 'scoreboard') scoreboard.refresh();
    });
  }
}

function init() {
  initPanels();
  initInput();
  controls.init();
  play.init();
  replay.init();
  renderLegend();
  $('color-by').addEventListener('change', (e) => {
    ui.colorBy = e.target.value;
    renderLegend();
    requestRender();
    scoreboard.refresh();
  });
  $('btn-fit').onclick = () => view.fit();
  $('inspector-close').onclick = () => inspector.close();
  $('inspector-follow').addEventListener('change', (e) => setFollow(e.target.checked));
  $('inspector-body').addEventListener('click', (e) => {
    const a = e.target.closest('a.ent');
    if (a) selectAgent(Number(a.dataset.id), { centre: true });
  });
  $('event-list').addEventListener('click', (e) => {
    const link = e.target.closest('a.ent');
    if (link) { selectAgent(Number(link.dataset.id), { centre: true }); return; }
    const li = e.target.closest('li[data-i]');
    if (li) events.click(Number(li.dataset.i));
  });
  for (const id of ['event-type', 'event-agent', 'event-text']) $(id).addEventListener('input', () => events.render());
  $('event-scope').addEventListener('change', (e) => events.setScope(e.target.value));
  $('event-routine').addEventListener('change', (e) => { events.routine = e.target.checked; events.render(); });
  $('minimap').addEventListener('click', (e) => minimap.click(e));
  finder.init();
  timeline.init();
  $('event-pause').onclick = (e) => {
    events.paused = !events.paused;
    e.currentTarget.classList.toggle('armed', events.paused);
    e.currentTarget.textContent = events.paused ? '▶' : '❚❚';
    if (!events.paused) events.render();
  };
  $('scoreboard').tBodies[0].addEventListener('click', (e) => {
    const tr = e.target.closest('tr[data-id]');
    if (!tr) return;
    const row = scoreboard.rows.find((r) => r.id === Number(tr.dataset.id));
    selectAgent(Number(tr.dataset.id), { centre: true, at: row ? [row.x, row.y] : null });
  });
  $('score-sort').addEventListener('change', () => scoreboard.refresh());

  new ResizeObserver(() => resizeCanvas()).observe(canvas.parentElement);
  resizeCanvas();
  window.addEventListener('resize', () => { if (charts.data) charts.draw(); timeline.draw(); });
  // A hidden tab gets no animation frames: draw as soon as it shows again.
  document.addEventListener('visibilitychange', () => { if (!document.hidden) { renderQueued = false; requestRender(); } });

  ensureTerrain().catch(() => {});
  status.refresh().then(() => events.prefill());
  ws.connect();
  setInterval(() => { if (!document.hidden) status.refresh(); }, 1000);
  setInterval(() => scoreboard.refresh(), 2000);
  setInterval(() => charts.refresh(), 5000);
  scoreboard.refresh();
  charts.refresh();
  events.render();
}

window.agentWorld = { store, view, selectAt, selectAgent, screenOf, colourOf, inspector, ws, subs, api, perf, replay, speech, motion, timeline, setFollow, play, chat };
Object.assign(window.agentWorld, { token, ui });  // for surveys.js (and other panels of their own files)
init();
})();
