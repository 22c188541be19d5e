"""What a root field reads of its own request: the context, and whether the client selected
a field that costs a read of its own (a `total`, a `totalCount`)."""

from __future__ import annotations

from typing import Any

from strawberry.types import Info
from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField, Selection

from suspended_runs import resolvers

ContextInfo = Info[resolvers.Context, Any]


def selects(fields: list[Selection], name: str) -> bool:
    """Whether the resolved field's selection names `name`, through fragments too."""

    def walk(selections: list[Selection]) -> bool:
        for selection in selections:
            if isinstance(selection, SelectedField) and selection.name == name:
                return True
            if isinstance(selection, FragmentSpread | InlineFragment) and walk(
                selection.selections
            ):
                return True
        return False

    return walk(fields)
