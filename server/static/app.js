// The inbox: who is asking, the three views, filters, paging, and polling (a conditional
// GET every few seconds while the tab is visible; seldom while the list is pushed, live.js).

import * as actions from "./actions.js";
import * as api from "./api.js";
import * as live from "./live.js";
import { ago, until } from "./answers.js";
import { $, $$, h, setText } from "./dom.js";
import { readFilters, variables, writeFilters } from "./filters.js";
import { clearCards, renderList, showAgents } from "./list.js";
import { VIEWER, runQuery, runsQuery, waitingQuery } from "./queries.js";
import { may, state } from "./state.js";
import { wireKeys } from "./keys.js";
import { loadTimes } from "./times.js";
import { VIEWS, runFromPath, viewFromHash, waits } from "./views.js";
import { learnWhy } from "./why.js";

const POLL_MS = 4000;
const LIVE_POLL_MS = 30_000;
let signedIn = false;
let loadedAt = null;
let sequence = 0;
let timer = null;
const act = {
  decide: actions.decide,
  operate: actions.operate,
  review: actions.review,
  select: (run, on) => select(run, on),
};

// Who is asking --------------------------------------------------------------------------

async function whoami() {
  try {
    const { data } = await api.query(VIEWER);
    const { subject, role, person } = data.viewer;
    Object.assign(state, { subject, role, person, roleKnown: true });
    state.authenticated = data.viewer.authenticated;
    enter();
  } catch (error) {
    if (error instanceof api.Unauthenticated) {
      const why = api.credentials()
        ? `The server did not accept these credentials (${error.message}).`
        : "This server needs an API key or a bearer token.";
      askCredentials(why);
    } else {
      problem(`Cannot reach the server (${error.message}); trying again.`);
      setTimeout(whoami, POLL_MS);
    }
  }
}

function askCredentials(why) {
  signedIn = false;
  clearTimeout(timer);
  live.unfollow();
  $("#main").hidden = true;
  $("#who").hidden = true;
  $("#sign-in").hidden = false;
  setText($("#sign-in-why"), why);
  $("#credential").focus();
}

function enter() {
  signedIn = true;
  $("#sign-in").hidden = true;
  $("#main").hidden = false;
  showWho();
  setView(viewFromHash(), { focus: false });
}

function showWho() {
  const role = state.role ? state.role.toLowerCase() : "no role here: you may see nothing";
  let text = "Signed in";
  if (!state.authenticated) text = "Open server: no credentials needed, everyone is an anonymous admin";
  else if (state.roleKnown) text = `Signed in as ${state.subject} (${role})`;
  setText($("#who-text"), text);
  $("#sign-out").hidden = !api.credentials();
  $("#who").hidden = false;
}

function signIn(event) {
  event.preventDefault();
  const value = $("#credential").value.trim();
  if (!value) return;
  api.setCredentials($("#credential-kind").value, value);
  $("#credential").value = "";
  whoami();
}

function signOut() {
  api.forgetCredentials();
  Object.assign(state, { role: null, roleKnown: false, subject: null, list: null });
  state.selected.clear();
  clearCards();
  askCredentials("Signed out.");
}

// Views, filters and paging ---------------------------------------------------------------

function setView(name, { focus = true } = {}) {
  const view = VIEWS[name];
  state.view = name;
  state.cursors = [null];
  state.list = null;
  state.selected.clear();
  clearCards();
  for (const link of $$("nav.views a")) {
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  $("#runs-heading").textContent = view.title;
  const times = name === "times";
  const one = name === "run"; // a run's own page: nothing to filter, no other page
  $("#times").hidden = !times;
  $("#runs").hidden = times;
  $("nav.pager").hidden = times || one;
  $("#filters").hidden = one;
  $("#view-note").textContent = view.note;
  $("#summary").textContent = "";
  updateBulk();
  if (focus) $("#runs-heading").focus();
  refresh().then(schedule);
}

function applyFilters(event) {
  event?.preventDefault();
  readFilters();
  state.cursors = [null];
  state.selected.clear();
  refresh().then(schedule);
}

function clearFilters() {
  const form = $("#filters");
  for (const name of Object.keys(state.filters)) form.elements[name].value = "";
  applyFilters();
}

function page(step) {
  if (step > 0 && state.list?.nextCursor) state.cursors.push(state.list.nextCursor);
  if (step < 0 && state.cursors.length > 1) state.cursors.pop();
  state.selected.clear();
  refresh().then(() => {
    schedule();
    $("#runs-heading").focus();
  });
}

// Loading and polling ---------------------------------------------------------------------

function refresh() {
  return load();
}

async function load() {
  if (!signedIn) return;
  const mine = ++sequence;
  try {
    if (state.view === "times") return await timesLoaded(mine);
    const data = state.view === "run" ? await oneRun() : (await api.query(listQuery(), variables())).data;
    if (mine !== sequence) return;
    loadedAt = Date.now();
    problem("");
    show(data);
  } catch (error) {
    if (mine === sequence) loadFailed(error);
  }
  tick();
}

async function timesLoaded(mine) {
  await loadTimes(variables().filter);
  if (mine !== sequence) return;
  loadedAt = Date.now();
  problem("");
  tick();
}

function listQuery() {
  return waits(state.view) ? waitingQuery() : runsQuery();
}

/** The run `/runs/<runId>` names, as a list of one. */
async function oneRun() {
  const { data } = await api.query(runQuery(), { id: runFromPath() });
  const runs = data.run ? [{ ...data.run, timeline: data.timeline ?? [] }] : [];
  return { agents: data.agents, list: { total: runs.length, hasMore: false, nextCursor: null, runs } };
}

function loadFailed(error) {
  if (error instanceof api.Unauthenticated) {
    askCredentials(`The server asks for credentials again (${error.message}).`);
  } else if (error instanceof api.GraphQLErrors && error.codes.includes("FORBIDDEN")) {
    problem("These credentials may not read runs: they have no role that allows it.");
  } else if (error instanceof api.GraphQLErrors) {
    problem(`The server refused the request: ${error.message}`);
  } else {
    problem(`Cannot reach the server (${error.message}); trying again.`);
  }
}

function schedule() {
  clearTimeout(timer);
  if (!signedIn || document.hidden || !$("#auto-refresh").checked) {
    live.unfollow();
    return;
  }
  live.follow(liveVariables(), refresh, schedule);
  const wait = live.isLive() ? LIVE_POLL_MS : POLL_MS;
  timer = setTimeout(async () => {
    await refresh();
    schedule();
  }, wait);
}

/** What the subscription follows: the waiting view's first page; null for any other. */
function liveVariables() {
  if (!waits(state.view) || state.cursors.length > 1) return null;
  const { filter, first } = variables();
  return { filter, first };
}

function problem(text) {
  setText($("#problem"), text);
}

/** Every second: "updated 5 s ago", and each run's age. */
function tick() {
  let note = document.hidden || !$("#auto-refresh").checked ? " (auto-refresh paused)" : "";
  if (!note && live.isLive()) note = " (live)";
  $("#updated").textContent = loadedAt ? `updated ${ago(new Date(loadedAt).toISOString())}${note}` : "not loaded yet";
  for (const time of $$("time[data-since]")) {
    time.textContent = `${time.dataset.verb} ${ago(time.dataset.since)}`.trim();
  }
  for (const time of $$("time[data-until]")) time.textContent = until(time.dataset.until);
}

// Showing a page of runs -------------------------------------------------------------------

function show(data) {
  showAgents(data.agents ?? []);
  state.list = data.list;
  const runs = visibleRuns();
  const ids = new Set(runs.map((r) => r.runId));
  for (const id of state.selected) if (!ids.has(id)) state.selected.delete(id);
  renderList(runs, act);
  summarize(runs);
  updateBulk();
  if (state.view !== "run") learnWhy(runs, rerender);
}

function visibleRuns() {
  const runs = state.list?.runs ?? [];
  if (state.view !== "operator") return runs;
  return runs.filter((run) => run.status === "STALLED" || run.outcomeUnknown);
}

function summarize(runs) {
  const list = state.list;
  const total = list.total;
  const words = {
    waiting: `${total} ${total === 1 ? "run waits" : "runs wait"} for a decision`,
    mine: `${total} ${total === 1 ? "run waits" : "runs wait"} for you`,
    operator: `${runs.length} ${runs.length === 1 ? "run needs" : "runs need"} an operator on this page`,
    recent: `${total} decided or finished ${total === 1 ? "run" : "runs"}`,
    run: total ? `Run ${runs[0]?.runId ?? ""}` : "No run",
  };
  let text = words[state.view];
  const running = list.runs.length - runs.length;
  if (running > 0) text += ` (${running} more ${running === 1 ? "is" : "are"} being continued normally, not shown)`;
  $("#summary").textContent = `${text}.`;
  $("#empty").textContent = VIEWS[state.view].empty;
  $("#empty").hidden = runs.length > 0;
  const first = (state.cursors.length - 1) * state.size;
  $("#page-label").textContent = list.runs.length
    ? `Page ${state.cursors.length}: runs ${first + 1} to ${first + list.runs.length} of ${total}`
    : `Page ${state.cursors.length}`;
  $("#newer").disabled = state.cursors.length <= 1;
  $("#older").disabled = !list.hasMore;
}

function rerender() {
  if (!state.list) return;
  renderList(visibleRuns(), act);
  updateBulk();
}

// Selection and bulk decisions -------------------------------------------------------------

function updateBulk() {
  const shown = waits(state.view) && may("APPROVER") && signedIn;
  $("#bulk").hidden = !shown;
  const count = state.selected.size;
  $("#selected-count").textContent = `${count} selected`;
  $("#bulk-approve").disabled = count === 0;
  $("#bulk-decline").disabled = count === 0;
  const runs = visibleRuns();
  $("#select-all").checked = runs.length > 0 && runs.every((r) => state.selected.has(r.runId));
}

function select(run, checked) {
  if (checked) state.selected.add(run.runId);
  else state.selected.delete(run.runId);
  rerender();
}

function selectAll(event) {
  for (const run of visibleRuns()) {
    if (event.target.checked) state.selected.add(run.runId);
    else state.selected.delete(run.runId);
  }
  rerender();
}

// The answer log ----------------------------------------------------------------------------

function log(label, text, tone) {
  const list = $("#answers");
  const now = new Date();
  list.prepend(
    h(
      "li",
      { class: `tone-${tone}` },
      h("time", { datetime: now.toISOString() }, now.toLocaleTimeString()),
      " ",
      h("strong", {}, label),
      ": ",
      text,
    ),
  );
  while (list.children.length > 30) list.lastElementChild.remove();
}

// Start -------------------------------------------------------------------------------------

function wire() {
  $("#sign-in-form").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", signOut);
  $("#filters").addEventListener("submit", applyFilters);
  $("#f-agent").addEventListener("change", applyFilters);
  $("#f-size").addEventListener("change", applyFilters);
  $("#clear-filters").addEventListener("click", clearFilters);
  $("#refresh").addEventListener("click", () => refresh());
  $("#auto-refresh").addEventListener("change", () => {
    schedule();
    tick();
  });
  $("#newer").addEventListener("click", () => page(-1));
  $("#older").addEventListener("click", () => page(1));
  $("#select-all").addEventListener("change", selectAll);
  $("#bulk-approve").addEventListener("click", () => actions.decideSelected("APPROVE", null));
  $("#bulk-decline").addEventListener("click", () => actions.decideSelected("DECLINE", $("#bulk-reason").value.trim()));
  window.addEventListener("hashchange", () => signedIn && setView(viewFromHash()));
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) clearTimeout(timer);
    else refresh().then(schedule);
    tick();
  });
}

actions.connect({ refresh, render: rerender, log, signIn: askCredentials });
wire();
wireKeys();
writeFilters();
setInterval(tick, 1000);
whoami();
