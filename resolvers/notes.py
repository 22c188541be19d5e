"""`addRunNote`, `deleteRunNote`, `AgentRun.notes`: plain text beside a run.

A note is written by an approver who may see the run, and deleted by its author (any of
their credentials) or an admin. Its body is plain text of at most MAX_TEXT_BYTES, without
control characters but tab and line breaks: what a reader is shown is what was written,
as text (the inbox never renders it as HTML). A note on a run outside the caller's scope
is answered as a note or run that does not exist. Notes are kept in a collection of their
own (storage/notes.py); the run's entry counts them, so a list that shows them changes
when one is added or deleted, and reads them only for runs that have some.
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.resolvers.outcomes import (
    DeleteNoteOutcome,
    Forbidden,
    NoteAdded,
    NoteDeleted,
    NoteNotFound,
    NoteOutcome,
    kind,
)
from suspended_runs.resolvers.reviewing import record, run_for
from suspended_runs.storage import RunEntry

MOST_NOTES_SHOWN = 100
_LINE_BREAKS = frozenset("\t\n\r")


async def add_note(context: Context, run_id: str, body: str) -> NoteOutcome:
    context.budget.limits.check_text(body, "input.body")
    _check_body(body)
    entry = await run_for(context, run_id, "writing a note")
    if not isinstance(entry, RunEntry):
        return entry
    # Counted first: a count over the notes there are costs a read, one under hides one.
    await context.storage.runs.reviews.count_note(run_id, 1)
    at = context.runtimes.claims.clock()
    note = await context.storage.notes.add(run_id, body, context.actor, context.person, at)
    await record(context, "add_note", run_id, "NoteAdded", note.note_id)
    return NoteAdded(note, replace(entry, note_count=entry.note_count + 1))


async def delete_note(context: Context, note_id: str) -> DeleteNoteOutcome:
    if not context.principal.may(Role.APPROVER):
        return Forbidden(Role.APPROVER.value, "deleting a note needs the approver role")
    note = await context.storage.notes.get(note_id)
    entry = await context.storage.runs.get(note.run_id) if note else None
    if note is None or (entry is not None and not context.principal.scope.allows(entry)):
        return NoteNotFound(note_id, f"no note {note_id}")
    if not context.is_caller(note.by) and not context.principal.may(Role.ADMIN):
        return Forbidden(Role.ADMIN.value, "only its author or an admin deletes a note")
    if not await context.storage.notes.delete(note):
        return NoteNotFound(note_id, f"no note {note_id}")  # deleted meanwhile
    if entry is not None:
        await context.storage.runs.reviews.count_note(note.run_id, -1)
    outcome = NoteDeleted(note_id, note.run_id)
    await record(context, "delete_note", note.run_id, kind(outcome), note_id)
    return outcome


def check_last(last: int) -> None:
    """`AgentRun.notes(last:)`'s bound (schema/run_notes.py reads them)."""
    if not 1 <= last <= MOST_NOTES_SHOWN:
        raise BadUserInput(f"last must be between 1 and {MOST_NOTES_SHOWN}", argument="last")


def _check_body(body: str) -> None:
    if not body.strip():
        raise BadUserInput("a note has some text", argument="input.body")
    control = next((c for c in body if _control(c)), None)
    if control is not None:
        raise BadUserInput(
            f"a note is plain text: U+{ord(control):04X} is a control character",
            argument="input.body",
        )


def _control(char: str) -> bool:
    return unicodedata.category(char) == "Cc" and char not in _LINE_BREAKS
