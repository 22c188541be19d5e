"""`RunNote`: plain text a reviewer wrote beside a run, and `AgentRun.notes`' reading of
them: one read for every run of a request that asks, none for a run that has none."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader

from suspended_runs import resolvers, storage
from suspended_runs.resolvers.notes import check_last


@strawberry.type(description="A note on a run (addRunNote): plain text, shown as text.")
class RunNote:
    id: strawberry.ID = strawberry.field(description="What deleteRunNote names it by.")
    body: str
    author: str = strawberry.field(description="The person who wrote it (Viewer.person).")
    by: str = strawberry.field(description="The credential it was written with.")
    at: datetime

    @classmethod
    def from_note(cls, note: storage.RunNote) -> RunNote:
        return cls(
            id=strawberry.ID(note.note_id),
            body=note.body,
            author=note.person,
            by=note.by,
            at=note.at,
        )


async def notes_of(
    info: strawberry.Info[resolvers.Context, Any], entry: storage.RunEntry, last: int
) -> list[RunNote]:
    """The run's last `last` notes, oldest first."""
    check_last(last)
    if entry.note_count <= 0:
        return []
    loaders, notes = info.context.loaders, info.context.storage.notes
    name = f"notes:{last}"
    loader = loaders.get(name)
    if loader is None:

        async def load(run_ids: list[str]) -> list[list[storage.RunNote]]:
            found = await notes.last_of(run_ids, last)
            return [found.get(run_id, []) for run_id in run_ids]

        loader = loaders[name] = DataLoader(load_fn=load)
    return [RunNote.from_note(note) for note in await loader.load(entry.run_id)]
