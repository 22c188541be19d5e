// The keyboard, for a reviewer working through a queue: j and k move between runs, a
// approves and d declines the focused run's pending call (the first one shown), and /
// goes to the filters. Keys typed into a field are the field's.

const FIELDS = "input, textarea, select, [contenteditable]";

function cards() {
  return [...document.querySelectorAll("#runs article.run")];
}

function focusedCard() {
  return document.activeElement?.closest?.("article.run") ?? null;
}

function move(step) {
  const all = cards();
  if (!all.length) return;
  const at = all.indexOf(focusedCard());
  const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(Math.max(at + step, 0), all.length - 1);
  const heading = all[next].querySelector("h3");
  heading.focus();
  heading.scrollIntoView({ block: "nearest" });
}

function press(name) {
  const card = focusedCard();
  const button = card && [...card.querySelectorAll("button")].find((b) => b.textContent === name && !b.disabled);
  if (!button) return;
  button.focus(); // where the page puts focus back after the answer: the next run, if this one left
  button.click();
}

const KEYS = {
  j: () => move(1),
  k: () => move(-1),
  a: () => press("Approve"),
  d: () => press("Decline"),
  "/": () => document.getElementById("f-resource")?.focus(),
};

export function wireKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target?.closest?.(FIELDS)) return;
    const action = KEYS[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });
}
