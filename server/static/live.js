// Live lists: where the server's WebSocket opens, the waiting view's first page is a
// subscription, and each page the server pushes has the list loaded again at once (one
// conditional GET); the page then polls seldom, only for what a push does not cover (the
// agents' counts). Where the WebSocket does not open, or closes, the page keeps polling
// every few seconds, and tries the WebSocket again a while later.

import * as api from "./api.js";
import { liveQuery } from "./queries.js";

const RETRY_MS = 30_000;
let current = null; // {key, open, stop}
let failedAt = -Infinity;

/** Whether pushes arrive: a subscription is open and the server took its credentials. */
export function isLive() {
  return current?.open === true;
}

/**
 * Follows the first page of `variables` ({filter, first}; null: nothing). `pushed()` on
 * each push; `ended()` when the subscription ends without being asked to.
 */
export function follow(variables, pushed, ended) {
  const key = variables && JSON.stringify(variables);
  if (current && current.key === key) return;
  unfollow();
  if (!variables || typeof WebSocket === "undefined" || Date.now() - failedAt < RETRY_MS) return;
  const entry = { key, open: false, stop: null };
  entry.stop = api.subscribe(liveQuery(), variables, {
    acknowledged: () => {
      entry.open = true;
    },
    next: () => pushed(),
    ended: () => {
      if (current !== entry) return;
      current = null;
      failedAt = Date.now();
      ended();
    },
  });
  current = entry;
}

export function unfollow() {
  const entry = current;
  current = null;
  entry?.stop();
}
