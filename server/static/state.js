// What the page knows and remembers between polls.

export const state = {
  view: "waiting", // a name of VIEWS (views.js)
  role: null, // "VIEWER" | "APPROVER" | "ADMIN"; null: not known (no viewer query)
  roleKnown: false,
  subject: null,
  person: null, // the reader's person (viewer.person): whose reviews and notes are theirs
  authenticated: true,
  filters: { agent: "", resource: "", thread: "", from: "", to: "" },
  size: 20,
  cursors: [null], // the `after` of each page visited: the last is the current page
  list: null, // the last page shown: {total, hasMore, nextCursor, runs}
  selected: new Set(), // run ids
  drafts: new Map(), // what the user typed, by field: kept across polls
  notes: new Map(), // answers shown on a run or call: {text, tone, alert}
  open: new Set(), // editors (<details>) left open
  busy: new Set(), // runs and calls with a request in flight
  invalid: new Map(), // field id -> the key of the note that says why its text was refused
  forced: new Set(), // runs the reader decides although another person reviews them
};

const RANK = { VIEWER: 0, APPROVER: 1, ADMIN: 2 };

/** Whether the caller's role allows what `role` may do. Unknown role: offer it, and let a
 * `Forbidden` answer tell (which then sets the role). */
export function may(role) {
  if (!state.roleKnown) return true;
  return state.role !== null && RANK[state.role] >= RANK[role];
}
