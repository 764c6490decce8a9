/* Agent World viewer: the Surveys panel (issue 33 item 4).
 *
 * Lists the world's surveys (GET /api/surveys), shows one's progress and its table as the
 * answers come (GET /api/surveys/ID: who answered what, from which brain and model), starts
 * one (POST /api/surveys, with the access token, like every write) and downloads its CSV.
 * Loaded after app.js; uses what app.js puts on window.agentWorld (api, token, ui,
 * selectAgent) and touches nothing of its own.
 */
'use strict';
(() => {
const aw = window.agentWorld;
if (!aw) return;
const $ = (id) => document.getElementById(id);
const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ESC[c]);
const FILTER_KEYS = ['personality', 'brain', 'model', 'team', 'area'];
const LIST_EVERY_MS = 3000;
const TABLE_EVERY_MS = 1000;   // the chosen survey, while it collects answers

const panel = $('panel-surveys');
const body = $('surveys-body');
if (!panel || !body) return;

body.innerHTML = `
  <form id="survey-form" class="row" autocomplete="off">
    <input type="text" id="survey-question" placeholder="Ask every matching agent…" maxlength="4000" required>
    <input type="text" id="survey-filter" placeholder="filter: personality=trader brain=llm area=0,0,20,20" title="key=value words: personality, brain, model, team, area (x0,y0,x1,y1); each value may list several, separated by commas; none: every living agent">
    <label title="the agents keep the question and their answer in their memory (a logged input)"><input type="checkbox" id="survey-remember"> remember</label>
    <button type="submit" id="survey-start">Ask all</button>
  </form>
  <div id="survey-note" class="muted" aria-live="polite"></div>
  <select id="survey-pick" title="the world's surveys, newest first"></select>
  <div id="survey-detail"></div>`;

const surveys = {
  list: [],
  chosen: null,       // the id of the survey shown
  table: null,        // its last GET /api/surveys/ID
  listTimer: null,
  tableTimer: null,

  open() { return !panel.classList.contains('collapsed') && !document.hidden; },

  note(text, bad = false) {
    const el = $('survey-note');
    el.textContent = text;
    el.classList.toggle('bad', bad);
  },

  // "personality=trader,gatherer area=0,0,9,9" -> {personality: "trader,gatherer", area: "0,0,9,9"}
  // (the server reads each value as the console does, and names what is wrong).
  parseFilter(text) {
    const filter = {};
    for (const word of text.split(/\s+/).filter(Boolean)) {
      const at = word.indexOf('=');
      if (at <= 0) throw new Error(`filter words are key=value (${FILTER_KEYS.join(', ')}), got '${word}'`);
      const key = word.slice(0, at).toLowerCase();
      if (key in filter) throw new Error(`filter ${key}= is given twice`);
      filter[key] = word.slice(at + 1);
    }
    return filter;
  },

  // A write needs the token: asked once (the page's own prompt) when the server says 401.
  async post(path, payload) {
    for (let attempt = 0; ; attempt++) {
      let r;
      try {
        r = await fetch(path, { method: 'POST', headers: aw.token.headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(payload) });
      } catch (err) {
        throw new Error(`the server did not answer (${err.message})`);
      }
      let got;
      try { got = await r.json(); } catch { got = { error: `HTTP ${r.status}` }; }
      if (r.status === 401 && attempt < 2) {
        if (attempt) aw.token.forget();
        if (await aw.token.ask('Starting a survey needs this world\'s access token.')) continue;
      }
      if (!r.ok) throw new Error(got.error || `HTTP ${r.status}`);
      return got;
    }
  },

  async start(ev) {
    ev.preventDefault();
    const question = $('survey-question').value.trim();
    if (!question) { this.note('error: write the question first', true); return; }
    let filter;
    try { filter = this.parseFilter($('survey-filter').value); } catch (err) { this.note(`error: ${err.message}`, true); return; }
    $('survey-start').disabled = true;
    try {
      const made = await this.post('/api/surveys', { question, filter, remember: $('survey-remember').checked });
      this.note(`survey ${made.id}: asking ${made.agents} agent${made.agents === 1 ? '' : 's'}; the answers come as they come`);
      $('survey-question').value = '';
      this.chosen = made.id;
      await this.refreshList();
      await this.refreshTable();
    } catch (err) {
      this.note(`error: ${err.message}`, true);
    } finally {
      $('survey-start').disabled = false;
    }
  },

  async refreshList() {
    if (!this.open()) return;
    try {
      const r = await aw.api.get('/api/surveys');
      this.list = r.surveys || [];
    } catch { return; }
    if (this.chosen == null && this.list.length) this.chosen = this.list[0].id;
    const pick = $('survey-pick');
    pick.hidden = !this.list.length;
    pick.innerHTML = this.list.map((s) => `<option value="${esc(s.id)}"${s.id === this.chosen ? ' selected' : ''}>` +
      `${esc(s.id)} · ${s.answered}/${s.agents}${s.done ? '' : ' …'} · ${esc(s.question.slice(0, 60))}</option>`).join('');
    if (!this.list.length) $('survey-detail').innerHTML = '<div class="muted">No surveys yet: ask every agent a filter matches the same question above (or /survey in the console).</div>';
    const shown = this.list.find((s) => s.id === this.chosen);
    if (shown && (!this.table || this.table.id !== shown.id || !this.table.done)) this.refreshTable();
  },

  async refreshTable() {
    if (this.chosen == null || !this.open()) return;
    try {
      this.table = await aw.api.get(`/api/surveys/${encodeURIComponent(this.chosen)}`);
    } catch (err) {
      if (err.status === 404) { this.chosen = null; this.table = null; }
      return;
    }
    this.render();
  },

  render() {
    const t = this.table;
    if (!t) return;
    const filt = Object.entries(t.filter || {}).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`).join(' ') || 'every living agent';
    const state = t.done ? `done at tick ${t.finished_tick}` : 'collecting';
    const files = t.files && t.files.length ? `written to ${t.files.map(esc).join(', ')}` : (t.unwritten ? esc(t.unwritten) : '');
    const rows = (t.rows || []).map((r) => {
      const said = r.status === 'answered' ? esc(r.answer) : `<span class="${r.status === 'failed' ? 'bad' : 'muted'}">${esc(r.error || r.status)}</span>`;
      const by = r.answered_by ? `${esc(r.answered_by)}${r.model ? ' · ' + esc(r.model) : ''}` : '';
      return `<tr class="s-${esc(r.status)}" data-id="${r.agent}"><td><a class="ent" data-id="${r.agent}">${esc(r.name)}</a></td>` +
        `<td class="muted">${esc(r.personality)}${r.team ? ' · ' + esc(r.team) : ''}</td><td>${esc(r.brain)}</td>` +
        `<td>${by}</td><td class="answer">${said}</td></tr>`;
    }).join('');
    $('survey-detail').innerHTML =
      `<div class="survey-head"><b>${esc(t.question)}</b> <span class="muted">(${esc(filt)}${t.remember ? ', remembered' : ''})</span></div>` +
      `<div class="row"><span id="survey-progress">${t.answered} answered, ${t.failed} not, ${t.waiting} waiting of ${t.agents}</span>` +
      ` <span class="pill ${t.done ? 'good' : 'warn'}" id="survey-state">${state}</span>` +
      ` <button type="button" id="survey-csv" title="the table as CSV: agent, name, personality, team, brain, answered_by, model, status, answer, …">CSV</button></div>` +
      (files ? `<div class="muted survey-files">${files}</div>` : '') +
      `<div class="survey-scroll"><table id="survey-table"><thead><tr><th>agent</th><th>type</th><th>brain</th><th>answered by</th><th>answer</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  },

  // The CSV through fetch (reads may need the token, which never goes into a URL).
  async download() {
    if (this.chosen == null) return;
    const id = this.chosen;
    try {
      const r = await fetch(`/api/surveys/${encodeURIComponent(id)}?format=csv`, { cache: 'no-store', headers: aw.token.headers() });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const url = URL.createObjectURL(await r.blob());
      const a = document.createElement('a');
      a.href = url;
      a.download = `survey-${id}.csv`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      this.note(`error: the table could not be downloaded (${err.message})`, true);
    }
  },

  // Writes are off where the server refuses them (served read-only, a replay).
  syncWrites() {
    const off = !!(aw.ui && (aw.ui.readOnly || aw.ui.replay));
    $('survey-form').hidden = off;
  },

  tick() {
    this.syncWrites();
    this.refreshList();
    if (this.table && !this.table.done) this.refreshTable();
  },

  init() {
    $('survey-form').addEventListener('submit', (ev) => this.start(ev));
    $('survey-pick').addEventListener('change', (ev) => { this.chosen = ev.target.value; this.table = null; this.refreshTable(); });
    $('survey-detail').addEventListener('click', (ev) => {
      if (ev.target.closest('#survey-csv')) { this.download(); return; }
      const a = ev.target.closest('a.ent');
      if (a) aw.selectAgent(Number(a.dataset.id), { centre: true });
    });
    panel.querySelector('.toggle').addEventListener('click', () => { if (this.open()) this.tick(); });
    setInterval(() => this.refreshList(), LIST_EVERY_MS);
    setInterval(() => { this.syncWrites(); if (this.table && !this.table.done) this.refreshTable(); }, TABLE_EVERY_MS);
    this.tick();
  },
};

surveys.init();
aw.surveys = surveys;
})();
