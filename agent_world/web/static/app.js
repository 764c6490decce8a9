/* Agent World viewer: one page, no build step, no libraries.
 *
 * Sections: constants, helpers, api, state store + spatial index, view, renderer,
 * ws, inspector, events, scoreboard, charts, controls, status, replay, input, boot.
 * The world is the server's; this page only mirrors what it is sent and never guesses.
 */
'use strict';
(() => {

// -- constants ----------------------------------------------------------------------------

const PERSONALITY_COLORS = {
  aggressive: '#ff5252', cautious: '#40a9ff', gatherer: '#e27bff', trader: '#ffb02e',
};
const BRAIN_COLORS = { builtin: '#9fb3c8', llm: '#ff5fd2' };
const OTHER_COLOR = '#dddddd';
// Terrain ids are the server's legend keys; unknown ids get magenta so they stand out.
const TERRAIN_RGB = { grass: [52, 84, 47], water: [31, 72, 120], rock: [92, 88, 84] };
const OBJECT_COLORS = { tree: '#0f3b18', berry_bush: '#b0407e', rock: '#a3a3a3', shelter: '#d6ab6a', hazard: '#c2410c', capture_point: '#facc15' };
const WHOLE_TILE_OBJECTS = new Set(['shelter', 'hazard', 'capture_point']);  // drawn tile-sized
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
const THINKING = 1, DEFENDING = 2;
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
function agentColor(personality, brain) {
  return ui.colorByBrain ? (BRAIN_COLORS[brain] || OTHER_COLOR)
    : (PERSONALITY_COLORS[personality] || OTHER_COLOR);
}
function hpColor(hp) { return hp > 60 ? '#46c46e' : hp > 30 ? '#f5b041' : '#ef5b5b'; }

const ui = { colorByBrain: false, readOnly: false, picking: false, readsNeedToken: false };

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
    for (const name of ['agents', 'items', 'objects']) {
      const layer = this[name];
      layer.clear();
      for (const rec of msg[name] || []) layer.put(rec);
    }
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
      if (part.drop) for (const id of part.drop) layer.drop(id);
      if (part.add) for (const rec of part.add) layer.put(rec);
      if (part.upd) for (const u of part.upd) layer.upd(u);
      if (name === 'agents' && part.add) for (const rec of part.add) this.names.set(rec[0], rec[5]);
      if (name === 'objects' && (part.add || part.drop)) this.objectsDirty = true;
    }
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
    this.scale = clamp(Math.min((this.w - 2 * this.offX) / store.width, this.h / store.height) * 0.96, this.minScale(), this.maxScale());
    this.cx = store.width / 2; this.cy = store.height / 2;
    this.changed();
  },
  changed() {
    this.clampCentre();
    requestRender();
    subs.check();
  },
};

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

function resizeCanvas() {
  const box = canvas.parentElement.getBoundingClientRect();
  view.dpr = window.devicePixelRatio || 1;
  view.w = Math.max(1, box.width); view.h = Math.max(1, box.height);
  canvas.width = Math.round(view.w * view.dpr);
  canvas.height = Math.round(view.h * view.dpr);
  if (inspector.id != null) view.offX = inspectorOffset();
  view.changed();
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

function render() {
  renderQueued = false;
  const now = performance.now();
  followSelected();
  const s = view.scale, W = view.w, H = view.h;
  ctx.setTransform(view.dpr, 0, 0, view.dpr, 0, 0);
  ctx.fillStyle = '#0a0c0f';
  ctx.fillRect(0, 0, W, H);
  const r = view.rect();
  const ox = view.fx() - view.cx * s, oy = H / 2 - view.cy * s;  // screen x, y of tile 0,0
  if (terrain.canvas) blitTileCanvas(terrain.canvas, r);

  if (s >= 14 && store.width) {  // tile grid once tiles are big enough to count
    ctx.strokeStyle = 'rgba(0,0,0,0.18)'; ctx.lineWidth = 1;
    ctx.beginPath();
    const gx0 = Math.max(0, Math.floor(r.x0)), gx1 = Math.min(store.width, Math.ceil(r.x1));
    const gy0 = Math.max(0, Math.floor(r.y0)), gy1 = Math.min(store.height, Math.ceil(r.y1));
    for (let x = gx0; x <= gx1; x++) { const px = Math.round(ox + x * s) + 0.5; ctx.moveTo(px, oy + gy0 * s); ctx.lineTo(px, oy + gy1 * s); }
    for (let y = gy0; y <= gy1; y++) { const py = Math.round(oy + y * s) + 0.5; ctx.moveTo(ox + gx0 * s, py); ctx.lineTo(ox + gx1 * s, py); }
    ctx.stroke();
  }

  // objects
  if (s < OBJECT_SPRITE_SCALE) {
    if (store.objectsDirty) rebuildObjectLayer();
    if (objectLayer.canvas) blitTileCanvas(objectLayer.canvas, r);
  } else {
    resetGroups();
    store.objects.forEachIn(r.x0, r.y0, r.x1, r.y1, (o) => group((o[3] === 0 ? 'e:' : 'o:') + o[4]).push(o));
    for (const [key, list] of groups) {
      if (!list.length) continue;
      const kind = key.slice(2);
      const size = s * (WHOLE_TILE_OBJECTS.has(kind) ? 0.86 : 0.62), off = (s - size) / 2;
      ctx.globalAlpha = key[0] === 'e' ? 0.45 : 1;  // harvested bare
      ctx.fillStyle = OBJECT_COLORS[kind] || '#cccccc';
      ctx.beginPath();
      for (const o of list) ctx.rect(ox + o[1] * s + off, oy + o[2] * s + off, size, size);
      ctx.fill();
      if (s >= 10) { ctx.strokeStyle = 'rgba(0,0,0,0.5)'; ctx.lineWidth = 1; ctx.stroke(); }
    }
    ctx.globalAlpha = 1;
  }

  // items
  if (s >= MIN_ITEM_SCALE) {
    resetGroups();
    store.items.forEachIn(r.x0, r.y0, r.x1, r.y1, (it) => group(ITEM_CATEGORY[it[4]] || 'other').push(it));
    const rad = Math.max(1, s * 0.16);
    for (const [cat, list] of groups) {
      if (!list.length) continue;
      ctx.fillStyle = CATEGORY_COLORS[cat] || '#ffffff';
      ctx.beginPath();
      for (const it of list) {
        // Items share a tile with what stands there: nudge them to a corner.
        const cx = ox + (it[1] + 0.72) * s, cy = oy + (it[2] + 0.72) * s;
        if (s < 4) ctx.rect(cx - 1, cy - 1, 2, 2);
        else { ctx.moveTo(cx + rad, cy); ctx.arc(cx, cy, rad, 0, Math.PI * 2); }
      }
      ctx.fill();
    }
  }

  // agents
  resetGroups();
  const thinking = [], defending = [];
  let drawn = 0;
  store.agents.forEachIn(r.x0, r.y0, r.x1, r.y1, (a) => {
    group(agentColor(a[6], a[7])).push(a);
    if (a[4] & THINKING) thinking.push(a);
    if (a[4] & DEFENDING) defending.push(a);
    drawn++;
  });
  const ar = clamp(s * 0.38, 3, 15);
  for (const [color, list] of groups) {
    if (!list.length) continue;
    ctx.fillStyle = color;
    ctx.beginPath();
    for (const a of list) {
      const cx = ox + (a[1] + 0.5) * s, cy = oy + (a[2] + 0.5) * s;
      if (s < 2) ctx.rect(Math.floor(cx) - 1, Math.floor(cy) - 1, 2, 2);
      else { ctx.moveTo(cx + ar, cy); ctx.arc(cx, cy, ar, 0, Math.PI * 2); }
    }
    ctx.fill();
    if (s >= 4) { ctx.strokeStyle = 'rgba(0,0,0,0.65)'; ctx.lineWidth = 1; ctx.stroke(); }
  }
  if (thinking.length) {
    ctx.strokeStyle = '#ffffff'; ctx.lineWidth = s < 2 ? 1 : 1.5;
    ctx.beginPath();
    const tr = s < 2 ? 2.5 : ar + 2.5;
    for (const a of thinking) {
      const cx = ox + (a[1] + 0.5) * s, cy = oy + (a[2] + 0.5) * s;
      ctx.moveTo(cx + tr, cy); ctx.arc(cx, cy, tr, 0, Math.PI * 2);
    }
    ctx.stroke();
  }
  if (defending.length && s >= 4) {
    ctx.strokeStyle = '#7fe7ff'; ctx.lineWidth = 2;
    ctx.beginPath();
    for (const a of defending) {
      const cx = ox + (a[1] + 0.5) * s, cy = oy + (a[2] + 0.5) * s;
      ctx.moveTo(cx + (ar + 1.5) * Math.cos(Math.PI * 0.8), cy + (ar + 1.5) * Math.sin(Math.PI * 0.8));
      ctx.arc(cx, cy, ar + 1.5, Math.PI * 0.8, Math.PI * 1.2);
      ctx.moveTo(cx + (ar + 1.5) * Math.cos(-Math.PI * 0.2), cy + (ar + 1.5) * Math.sin(-Math.PI * 0.2));
      ctx.arc(cx, cy, ar + 1.5, -Math.PI * 0.2, Math.PI * 0.2);
    }
    ctx.stroke();
  }
  if (s >= 8) {  // health bars
    const bw = Math.max(10, s * 0.9), bh = s >= 16 ? 4 : 3;
    store.agents.forEachIn(r.x0, r.y0, r.x1, r.y1, (a) => {
      const x = ox + (a[1] + 0.5) * s - bw / 2, y = oy + (a[2] + 0.5) * s - ar - bh - 4;
      ctx.fillStyle = 'rgba(0,0,0,0.7)'; ctx.fillRect(x - 1, y - 1, bw + 2, bh + 2);
      ctx.fillStyle = hpColor(a[3]); ctx.fillRect(x, y, bw * clamp(a[3], 0, 100) / 100, bh);
    });
  }
  const sel = inspector.id != null ? store.agents.get(inspector.id) : null;
  if (s >= 20 || sel) {  // names: everyone when close, the selected agent always
    ctx.font = '600 11px system-ui, sans-serif';
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    ctx.lineWidth = 3; ctx.strokeStyle = 'rgba(0,0,0,0.85)';
    const label = (a) => {
      const x = ox + (a[1] + 0.5) * s, y = oy + (a[2] + 0.5) * s + Math.max(ar, 2) + 3;
      ctx.strokeText(a[5], x, y); ctx.fillStyle = '#fff'; ctx.fillText(a[5], x, y);
    };
    if (s >= 20) store.agents.forEachIn(r.x0, r.y0, r.x1, r.y1, label);
    else if (sel) label(sel);
  }
  if (sel) {
    const cx = ox + (sel[1] + 0.5) * s, cy = oy + (sel[2] + 0.5) * s;
    ctx.strokeStyle = '#ffe066'; ctx.lineWidth = 2;
    ctx.beginPath(); ctx.arc(cx, cy, Math.max(ar, 3) + 5, 0, Math.PI * 2); ctx.stroke();
  }
  if (flash.until > now) {
    const t = 1 - (flash.until - now) / 1500;
    const cx = ox + (flash.x + 0.5) * s, cy = oy + (flash.y + 0.5) * s;
    ctx.strokeStyle = `rgba(255,224,102,${1 - t})`; ctx.lineWidth = 3;
    ctx.beginPath(); ctx.arc(cx, cy, 6 + t * 36, 0, Math.PI * 2); ctx.stroke();
    ctx.beginPath(); ctx.arc(cx, cy, Math.max(4, s * 0.7), 0, Math.PI * 2); ctx.stroke();
    requestRender();  // keep animating until the flash is over
  }
  if (ui.picking && hover.tile) {
    const [tx, ty] = hover.tile;
    ctx.strokeStyle = '#5aa9ff'; ctx.lineWidth = 2;
    ctx.strokeRect(ox + tx * s, oy + ty * s, Math.max(s, 3), Math.max(s, 3));
  }
  lastDrawn = drawn;
  perf.renders++;
  perf.lastRenderMs = performance.now() - now;
  document.body.dataset.agentsDrawn = String(drawn);
  updateZoomInfo();
}

function followSelected() {
  if (!inspector.follow || inspector.id == null) return;
  const rec = store.agents.get(inspector.id);
  const pos = rec ? [rec[1], rec[2]] : inspector.detail ? [inspector.detail.x, inspector.detail.y] : null;
  if (!pos) return;
  const tx = pos[0] + 0.5, ty = pos[1] + 0.5;
  if (tx !== view.cx || ty !== view.cy) { view.cx = tx; view.cy = ty; subs.check(); }
}

function updateZoomInfo() {
  const t = hover.tile ? ` · tile ${hover.tile[0]},${hover.tile[1]} ${terrainAt(hover.tile[0], hover.tile[1]) ?? ''}` : '';
  $('zoom-info').textContent = `${view.scale >= 1 ? view.scale.toFixed(1) : view.scale.toFixed(2)} px/tile · ${lastDrawn} drawn${t}`;
}

function renderLegend() {
  const entries = ui.colorByBrain ? BRAIN_COLORS : PERSONALITY_COLORS;
  let html = Object.entries(entries).map(([k, c]) => `<span><i style="background:${c}"></i>${esc(k)}</span>`).join('');
  html += '<span><i style="background:transparent;border:1.5px solid #fff"></i>thinking</span>';
  html += Object.entries(OBJECT_COLORS).map(([k, c]) => `<span><i class="sq" style="background:${c}"></i>${esc(k.replace('_', ' '))}</span>`).join('');
  $('legend').innerHTML = html;
}

// Nearest agent centre within tol CSS pixels of a canvas point, or null.
function agentNear(px, py, tol = 10) {
  const [tx, ty] = view.toTile(px, py);
  const rt = tol / view.scale + 1;
  let best = null, bestD = Infinity;
  const lim = Math.max(tol, clamp(view.scale * 0.38, 3, 15) + 3);
  store.agents.forEachIn(tx - rt, ty - rt, tx + rt, ty + rt, (a) => {
    const [sx, sy] = view.toScreen(a[1] + 0.5, a[2] + 0.5);
    const d = Math.hypot(sx - px, sy - py);
    if (d <= lim && d < bestD) { best = a; bestD = d; }
  });
  return best;
}

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
        if (msg.tick < store.tick) {  // a restarted world (or a replay that went back): old events mislead
          store.events.length = 0; store.eventKeys.clear(); events.changed();
        }
        store.world = msg.world;
        status.applyReadOnly(!!msg.read_only);
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
        break;
      case 'delta':
        store.applyDelta(msg);
        store.frames++;
        setTick(msg.tick);
        if (msg.events && events.scope === 'view' && store.addEvents(msg.events)) events.changed();
        if (msg.agents || msg.items || msg.objects) requestRender();
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
    controls.selectionChanged();
    requestRender();
  },
  close() {
    clearInterval(this.timer);
    this.id = null; this.detail = null; this.gone = false;
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
      `<span class="badge" style="background:${BRAIN_COLORS[d.brain] || OTHER_COLOR}">${esc(d.brain)}</span>` +
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
      `<span>mind</span><span>${thinkingHtml}</span>` +
      `<span>reputation</span><span>${fmt(d.reputation, 3)}</span>` +
      (d.combat && d.combat.last_attacker ? `<span>attacked by</span><span>${ent(d.combat.last_attacker)} at ${esc(d.combat.last_attacked)}</span>` : '') +
      (d.combat && d.combat.defending_until > d.tick ? '<span>defending</span><span>until ' + esc(d.combat.defending_until) + '</span>' : '') +
      `</div>`);
    html += sec(`plan${d.plan_source ? ` <span class="muted">(${esc(d.plan_source)})</span>` : ''}`,
      list(d.plan, (p) => `<li class="mono">${act(p)}</li>`, 'no plan'));
    if (d.llm && d.llm.length) html += sec('last decision (LLM)', `<div class="llm-lines mono">${esc(d.llm.join('\n'))}</div>`);
    html += sec('relationships', list(d.relationships, (r) => `<li>${ent(r.id, r.name)} <span class="muted">${fmt(r.value, 2)}</span></li>`));
    const sees = d.sees || {};
    html += sec('sees', `<div>${(sees.agents || []).length ? (sees.agents || []).map((id) => ent(id)).join(', ') : '<span class="none">no agents</span>'}` +
      ` <span class="muted">· ${(sees.items || []).length} items · ${(sees.objects || []).length} objects</span></div>`);
    html += sec('heard', list((d.heard || []).slice(-8).reverse(), (h) => `<li><span class="muted">${esc(h.tick)}</span> ${ent(h.from, h.name)}: “${esc(h.text)}”</li>`, 'nothing'));
    html += sec('memory', list((d.memory || []).slice().reverse(), (m) => `<li><span class="muted">${esc(m.tick)}</span> ${esc(m.text ?? JSON.stringify(m))}</li>`, 'nothing yet'));
    html += sec('recent events', list((d.recent_events || []).slice().reverse(), (e) => `<li><span class="muted">${esc(e.tick)}</span> <b>${esc(e.type)}</b> ${esc(summarize(e))}</li>`));
    body.innerHTML = html;
    body.scrollTop = scroll;
  },
};

// -- events -------------------------------------------------------------------------------

// An input's own fields are spread over its line, so a field named "kind" (a spawn's)
// replaces kind: "input"; a source outside the world's kinds gives it away.
const isInput = (e) => e.kind === 'input' || (!['event', 'check', 'marker'].includes(e.kind) && e.source != null);

// One readable line per event type; anything unknown falls back to its fields.
function summarize(e) {
  const n = (id, name) => name || store.nameOf(id) || (isInt(id) ? `#${id}` : '?');
  const who = n(e.agent, e.name);
  const act = (a) => `${a.name}(${Object.entries(a.args || {}).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ')})`;
  switch (isInput(e) ? (e.type === 'plan' ? 'plan' : 'input') : e.type) {
    case 'plan':  // an LLM decision arriving
      return `${who} decided (${e.source || '?'}${e.latency_ms != null ? `, ${(e.latency_ms / 1000).toFixed(1)} s` : ''}): ` +
        `${(e.actions || []).map(act).join(', ')}${e.thought ? ` — “${e.thought}”` : ''}`;
    case 'input': {
      const skip = ['tick', 'seq', 'type', 'source', 'raw', 'usage'];
      const rest = Object.entries(e).filter(([k, v]) => !skip.includes(k) && !(k === 'kind' && v === 'input'))
        .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
      return `${e.source || '?'}: ${e.type} ${rest}`;
    }
    case 'say': return `${who}${isInt(e.to) ? ` → ${n(e.to, e.to_name)}` : ''}: “${e.text}”`;
    case 'attack': return `${who} hit ${n(e.target, e.target_name)} for ${fmt(e.damage, 1)}${e.defended ? ' (defended)' : ''} → ${fmt(e.health, 1)} hp`;
    case 'death': return `${who} died: ${e.cause || '?'}${e.age != null ? ` (age ${e.age})` : ''}`;
    case 'spawn': return `${who} (${e.personality || '?'}) appeared at ${e.x},${e.y}`;
    case 'pickup': return `${who} picked up ${e.qty ?? 1} ${e.item}`;
    case 'drop': return `${who} dropped ${e.qty ?? 1} ${e.item}`;
    case 'eat': return `${who} ate ${e.item}`;
    case 'use': return `${who} used ${e.item}`;
    case 'harvest': return `${who} harvested ${e.item || 'nothing'} from a ${String(e.object || '?').replace('_', ' ')}`;
    case 'theft': return e.success === false
      ? `${who} tried to steal ${e.item || ''} from ${n(e.victim, e.victim_name)}${e.noticed ? ' and was caught' : ''}`
      : `${who} stole ${e.qty ?? ''} ${e.item || ''} from ${n(e.victim, e.victim_name)}${e.noticed ? ' (seen)' : ''}`;
    case 'gift': return `${who} gave ${e.item ? `${e.qty ?? 1} ${e.item}` : goods(e.goods)} to ${n(e.target, e.target_name)}`;
    case 'team_say': return `${who} → team ${e.team}: “${e.text}”`;
    case 'craft': return `${who} crafted a ${e.item}`;
    case 'capture': return `team ${e.team} took the point at ${e.x},${e.y}${e.previous ? ` from ${e.previous}` : ''}`;
    case 'hazard': return `${who} hurt by thorns (${fmt(e.damage, 1)})`;
    case 'trade_offer': return `${who} offers ${goods(e.give)} to ${n(e.target, e.target_name)} for ${goods(e.want)}`;
    case 'trade': return `${who} traded ${goods(e.give)} with ${n(e.target, e.target_name)} for ${goods(e.want)}`;
    case 'trade_declined': return `${who} declined ${n(e.target, e.target_name)}'s offer`;
    case 'trade_undone': return `${who}'s trade with ${n(e.target, e.target_name)} fell through${e.reason ? `: ${e.reason}` : ''}`;
    case 'trade_expired': return `offer ${e.offer} from ${n(e.agent)} to ${n(e.target)} expired`;
    case 'spoiled': return `${who}'s ${goods(e.goods)} spoiled`;
    case 'price': return `${e.item}: ${fmt(e.old)} → ${fmt(e.price)} (supply ${e.supply}, demand ${e.demand})`;
    case 'defend': return `${who} defends`;
    case 'weapon_broke': return `${who}'s ${e.item} broke`;
    case 'action_failed': return `${who}: ${e.action} failed: ${e.reason}`;
    case 'given': return `${n(e.target, e.target_name)} was given ${e.qty} ${e.item}`;
    case 'removed': return `${e.what || n(e.target)} removed`;
    case 'ability': return `${who} used ability ${e.ability}`;
    case 'ability_requested': return `${who} asks the angel: “${e.text}”`;
    case 'input_rejected': return `${e.source || ''} ${e.input} rejected: ${e.reason}`;
    case 'census': return Object.entries(e).filter(([k]) => !['tick', 'seq', 'kind', 'type'].includes(k))
      .slice(0, 8).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
    default: {
      const skip = new Set(['tick', 'seq', 'kind', 'type', 'x', 'y', 'agent', 'name']);
      const rest = Object.entries(e).filter(([k]) => !skip.has(k))
        .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
      return `${isInt(e.agent) ? who + ' ' : ''}${rest}`;
    }
  }
}

// The agent an event is about: the first entity field that names someone; for a death,
// rather the killer, since the dead one cannot be inspected any more.
function eventAgent(e) {
  const keys = e.type === 'death' ? ['killer', ...ENTITY_KEYS] : ENTITY_KEYS;
  for (const k of keys) if (isInt(e[k]) && e[k] !== NO_ONE) return e[k];
  return null;
}

const events = {
  scope: 'view', paused: false, dropped: 0, timer: 0, shown: [], pollSince: null, pollTimer: 0,
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
    if (text && !(`${e.type} ${summarize(e)}`.toLowerCase().includes(text))) return false;
    return true;
  },
  render() {
    if (this.paused) return;
    this.syncTypes();
    this.shown = store.events.filter((e) => this.matches(e));
    const html = this.shown.map((e, i) => {
      const click = isInt(e.x) || eventAgent(e) != null;
      return `<li data-i="${i}" class="t-${esc(e.type)}${isInput(e) ? ' input' : ''}${click ? ' clickable' : ''}">` +
        `<span class="tick">${e.tick}</span><span class="type" title="${esc(e.type)}">${esc(e.type)}</span><span class="text">${esc(summarize(e))}</span></li>`;
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
        `<td><span class="dot" style="background:${agentColor(a.personality, a.brain)}"></span>${esc(a.name)}</td>` +
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
    $('btn-kill').disabled = !live || ui.readOnly;
    $('btn-give').disabled = !live || ui.readOnly;
  },
  setPicking(on) {
    ui.picking = on && !ui.readOnly;
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
      $('status-world').textContent = `${s.world} · seed ${s.seed} · ${s.map.width}×${s.map.height}`;
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
      replay.update(s.replay);
    } catch (err) {
      this.failures++;
      const el = $('status-state');
      el.textContent = 'no server';
      el.title = err.message;
      el.className = 'pill bad';
    }
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
  const hex = agentColor(a[6], a[7]);
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

function setFollow(on) {
  inspector.follow = on;
  $('inspector-follow').checked = on;
  if (on) requestRender();
}

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
    selectAt(x, y);
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
      `${a[4] & THINKING ? ' · <i>thinking…</i>' : ''}${a[4] & DEFENDING ? ' · defending' : ''}`;
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
  replay.init();
  renderLegend();
  $('color-by-brain').addEventListener('change', (e) => {
    ui.colorByBrain = e.target.checked;
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
    const li = e.target.closest('li[data-i]');
    if (li) events.click(Number(li.dataset.i));
  });
  for (const id of ['event-type', 'event-agent', 'event-text']) $(id).addEventListener('input', () => events.render());
  $('event-scope').addEventListener('change', (e) => events.setScope(e.target.value));
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
  window.addEventListener('resize', () => { if (charts.data) charts.draw(); });

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

window.agentWorld = { store, view, selectAt, selectAgent, screenOf, colourOf, inspector, ws, subs, api, perf, replay };
init();
})();
