// The "Decision times" view: decisionStats as tables, for those who watch how long
// agents wait for people (within the caller's scope and the page's filters).

import * as api from "./api.js";
import { $, h } from "./dom.js";
import { DECISION_TIMES } from "./queries.js";


/** "42 s", "3.5 min", "2.1 h": a duration in words (none: "—"). */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${(seconds / 60).toFixed(1)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

export async function loadTimes(filter) {
  const { data } = await api.query(DECISION_TIMES, { filter });
  showTimes(data.stats);
}

function table(caption, first, rows) {
  return h(
    "table",
    { class: "times" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, [first, "Decisions", "Median", "p90"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, row.key || "unnamed"),
          h("td", {}, String(row.decisions)),
          h("td", {}, duration(row.medianSeconds)),
          h("td", {}, duration(row.p90Seconds)),
        ),
      ),
    ),
  );
}

function showTimes(stats) {
  const counts = h(
    "p",
    { class: "counts" },
    `${stats.approved} approved, ${stats.declined} declined, ${stats.resumed} resumed by people; ${stats.expired} expired.`,
  );
  $("#times").replaceChildren(
    counts,
    table("Every decision by a person", "", [{ ...stats.times, key: "All" }]),
    table("By agent", "Agent", stats.byAgent),
    table("By tool", "Tool", stats.byTool),
  );
}
