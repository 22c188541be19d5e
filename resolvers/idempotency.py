"""Idempotency keys: a request repeated under the same key gets the first answer again.

Each person's keys are their own (resolvers/people.py): a person's key and token share
them. A key kept under a credential (`key:<name>`, `jwt:<sub>`: before keys were a
person's, or by a key that named no person then) is not rewritten: it answers a repeat by
any credential of the person that credential is now, and no one else's; it is looked up
by exact `_id` under the caller's credential and those the configuration spells for the
person (People.credentials_of), never by a scan of every kept key. The first request
holds its key under a lease it renews while it works; a twin waits for the answer, takes
the key over when the lease ran out (its holder died), and after a while answers
`DecisionInProgress`. An answer that applied nothing (InvalidResumeData, Forbidden,
ExecutorUnavailable: the decision certainly never reached the runtime) is not kept, so a
retry under the key may succeed. A kept answer that shows a run is answered with the run
as it is now, not as it was, and only to a caller who may still see it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.resolvers.outcomes import (
    APPLIED_NOTHING,
    DecisionInProgress,
    RunNotFound,
    decode,
    encode,
)
from suspended_runs.storage import database_fault

_log = logging.getLogger(__name__)

_TWIN_WAIT = 20.0
"""Seconds a twin waits for the first answer (at most one claim lease), up to three times,
before it answers DecisionInProgress."""


async def answered_once(
    context: Context,
    key: str | None,
    fingerprint: str,
    run_id: str,
    work: Callable[[], Awaitable[Any]],
) -> Any:
    """`work()`'s answer, or the answer already given under `key` to the same request."""
    if key is None:
        return await work()
    log, claims = context.storage.decisions, context.runtimes.claims
    kept_before = await _kept_before(context, key, fingerprint, run_id)
    if kept_before is not None:
        return kept_before
    key = f"{context.principal.person}\x00{key}"
    earlier = await _earlier_answer(context, key, fingerprint, run_id)
    if earlier is not None:
        return earlier
    try:
        async with claims.renewing(lambda: log.renew_key(key, claims.clock() + claims.lease)):
            outcome = await work()
    except BaseException:
        await _kept_or_let_go(log.release_key(key))
        raise
    if isinstance(outcome, APPLIED_NOTHING):
        await _kept_or_let_go(log.release_key(key))
    else:
        await _kept_or_let_go(log.store_answer(key, encode(outcome)))
    return outcome


async def _kept_or_let_go(work: Awaitable[None]) -> None:
    """Keep the answer, or let the key go; a database that fails it changes no answer
    (the decision may have been applied): the key's lease runs out, and a retry under it
    looks at the run again."""
    try:
        await work
    except Exception as exc:
        if not database_fault(exc):
            raise
        _log.warning("an idempotency key was left to its lease", exc_info=exc)


async def _kept_before(context: Context, key: str, fingerprint: str, run_id: str) -> Any:
    """The answer kept under `key` by a credential of the caller's person, read through
    the mapping in force now (People.credentials_of, exact spellings: one lookup by `_id`,
    however many keys are kept): their own credential's first, then the oldest; None when
    no credential of theirs kept one."""
    principal = context.principal
    if not principal.authenticated:
        return None  # an open server's callers have no credentials
    holders = context.people.credentials_of(principal.subject, principal.person)
    held = await context.storage.decisions.answers_kept([f"{h}\x00{key}" for h in holders])
    # Their own credential's first: its answer is the one this very caller was given.
    held.sort(key=lambda kept: kept[0] != f"{principal.subject}\x00{key}")
    for _, use in held:
        if use.request_hash == fingerprint and use.answer is not None:
            return await _as_now(context, decode(use.answer), run_id)
    if held:
        raise _reused()
    return None


def _reused() -> BadUserInput:
    return BadUserInput(
        "this idempotencyKey was used for a different request: use a new key for each new "
        "decision (a retry of the same one keeps its key)",
        argument="input.idempotencyKey",
    )


async def _earlier_answer(context: Context, key: str, fingerprint: str, run_id: str) -> Any:
    log, claims = context.storage.decisions, context.runtimes.claims
    for _ in range(3):
        use = await log.take_key(key, fingerprint, claims.clock(), claims.lease)
        if use is None:
            return None  # taken (or taken over): this request answers
        if use.request_hash != fingerprint:
            raise _reused()
        wait = min(_TWIN_WAIT, claims.lease.total_seconds())
        answer = use.answer or await log.wait_for_answer(key, wait)
        if answer is not None:
            return await _as_now(context, decode(answer), run_id)
    current = await context.storage.runs.get(run_id)
    if current is None or not context.principal.scope.allows(current):
        return RunNotFound(run_id, f"no run {run_id}")
    return DecisionInProgress(
        run_id,
        "a request with this idempotencyKey is still being answered: ask again later",
        current,
    )


async def _as_now(context: Context, outcome: Any, run_id: str) -> Any:
    """A kept answer, with the run it shows as it is now; for a caller who may no longer
    see the run (a narrower scope since), the answer to a run that does not exist."""
    current = await context.storage.runs.get(run_id)
    if current is None or not context.principal.scope.allows(current):
        return RunNotFound(run_id, f"no run {run_id}")
    if "run" not in outcome.__dataclass_fields__:
        return outcome
    run = outcome.run  # None in a refusal kept before refusals carried their run
    if run is not None and run.run_id != run_id:
        current = await context.storage.runs.get(run.run_id) or run
    return type(outcome)(**{**_fields(outcome), "run": current})


def _fields(outcome: Any) -> dict[str, Any]:
    return {name: getattr(outcome, name) for name in outcome.__dataclass_fields__}
