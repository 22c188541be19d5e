// The filter form: kept in the address (so a view can be shared), and sent as the list
// query's variables.

import { $, h } from "./dom.js";
import { state } from "./state.js";
import { VIEWS } from "./views.js";

export function readFilters() {
  const form = $("#filters");
  for (const name of Object.keys(state.filters)) state.filters[name] = form.elements[name].value.trim();
  state.size = Number(form.elements.size.value) || 20;
  const params = new URLSearchParams(Object.entries(state.filters).filter(([, v]) => v));
  if (state.size !== 20) params.set("size", String(state.size));
  const query = params.toString();
  history.replaceState(null, "", `${location.pathname}${query ? `?${query}` : ""}${location.hash}`);
}

export function writeFilters() {
  const params = new URLSearchParams(location.search);
  const form = $("#filters");
  for (const name of Object.keys(state.filters)) {
    state.filters[name] = params.get(name) ?? "";
    if (name === "agent" && state.filters.agent) form.elements.agent.append(h("option", { value: state.filters.agent }, state.filters.agent));
    form.elements[name].value = state.filters[name];
  }
  const size = params.get("size");
  if (size && [...form.elements.size.options].some((o) => o.value === size)) form.elements.size.value = size;
  state.size = Number(form.elements.size.value);
}

/** A date input's day, from its first to its last millisecond in the user's time zone. */
function dayBound(value, end) {
  const [year, month, day] = value.split("-").map(Number);
  const date = end ? new Date(year, month - 1, day, 23, 59, 59, 999) : new Date(year, month - 1, day);
  return date.toISOString();
}

/** The list query's variables: the filters, the view's states, the page asked for. */
export function variables() {
  const f = state.filters;
  const filter = {};
  if (f.agent) filter.agentId = f.agent;
  if (f.resource) filter.resourceId = f.resource;
  if (f.thread) filter.threadId = f.thread;
  if (f.from) filter.fromDate = dayBound(f.from, false);
  if (f.to) filter.toDate = dayBound(f.to, true);
  const statuses = VIEWS[state.view].statuses;
  if (statuses) filter.status = statuses;
  if (VIEWS[state.view].assigned) filter.assignedToMe = true;
  return { filter, first: state.size, after: state.cursors.at(-1) };
}
