// The inbox's views: what each shows, and which states it asks for.

export const VIEWS = {
  waiting: {
    title: "Waiting for a decision",
    note: "",
    empty: "Nothing waits for a decision.",
    waiting: true,
  },
  mine: {
    title: "Assigned to me",
    note: "Runs waiting for a decision that a review policy assigns to you: by your name or one of your groups, escalations included.",
    empty: "Nothing waits for you.",
    waiting: true,
    assigned: true,
  },
  operator: {
    title: "Needs an operator",
    note: "Runs whose process stopped (STALLED), and runs whose decision's answer was lost (RUNNING, outcome unknown). Nothing re-runs them by itself.",
    empty: "No run needs an operator.",
    statuses: ["STALLED", "RUNNING"],
  },
  recent: {
    title: "Recent",
    note: "Decided and finished runs, kept by the server for a few days.",
    empty: "No finished run.",
    statuses: ["COMPLETED", "FAILED", "CANCELLED", "ENDED"],
  },
  times: {
    title: "Decision times",
    note: "How long people took from a run's suspension to their decision, for the runs the filters and your credentials hold (median and p90).",
    empty: "",
  },
  run: {
    title: "One run",
    note: "The run a link (a webhook's) names, in whatever state it is.",
    empty: "No such run, or not one these credentials may see.",
  },
};

/** Whether a view lists runs waiting for decisions (which it offers to decide). */
export function waits(view) {
  return VIEWS[view]?.waiting === true;
}

/** The run the address names (`/runs/<runId>`), else null. */
export function runFromPath() {
  const match = location.pathname.match(/^\/runs\/([^/]+)$/);
  return match ? decodeURIComponent(match[1]) : null;
}

/** The view the address names (`/runs/<runId>`, `#operator`), else the first. */
export function viewFromHash() {
  const name = location.hash.slice(1);
  if (runFromPath() && !name) return "run";
  return name in VIEWS && name !== "run" ? name : "waiting";
}
