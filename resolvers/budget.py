"""What one request may cost: rows read (every root field's: a page and the rows an offset
skips, a run, an id of `node`/`nodes`, an agent of `agents`, a record of the log, in every
alias), mutations, and the size of free text (reason, prompt) and of JSON given as data
(resumeData, editedArgs).

The limits come from settings; a request over one is refused with a BAD_USER_INPUT
error whose `extensions.limit` names the setting. Rows and mutations are taken from the
request's budget before any work, so a refused field did nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLError


@dataclass(frozen=True, slots=True)
class RequestLimits:
    max_rows: int = 2000
    max_mutations: int = 10
    max_text_bytes: int = 8192
    max_json_bytes: int = 65536

    def check_text(self, value: str | None, argument: str) -> None:
        if value is not None and len(value.encode()) > self.max_text_bytes:
            raise CostLimit(f"{argument} is over {self.max_text_bytes} bytes", "MAX_TEXT_BYTES")

    def check_json(self, value: Any, argument: str) -> None:
        if value is None:
            return
        size = len(json.dumps(value, separators=(",", ":"), default=str).encode())
        if size > self.max_json_bytes:
            raise CostLimit(f"{argument} is over {self.max_json_bytes} bytes", "MAX_JSON_BYTES")


@dataclass(slots=True)
class RequestBudget:
    """What is left of one request's limits; made anew for every request."""

    limits: RequestLimits = field(default_factory=RequestLimits)
    rows: int = -1
    mutations: int = -1

    def __post_init__(self) -> None:
        self.rows, self.mutations = self.limits.max_rows, self.limits.max_mutations

    def take_rows(self, rows: int) -> None:
        if rows > self.rows:
            raise CostLimit(
                f"this request asks for more than {self.limits.max_rows} rows in all "
                "(aliases x page size, with the rows an offset skips and one per agent)",
                "MAX_ROWS_PER_REQUEST",
            )
        self.rows -= rows

    def take_mutation(self) -> None:
        if self.mutations < 1:
            raise CostLimit(
                f"at most {self.limits.max_mutations} mutations per request",
                "MAX_MUTATIONS_PER_REQUEST",
            )
        self.mutations -= 1


class CostLimit(GraphQLError):
    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message, extensions={"code": "BAD_USER_INPUT", "limit": limit})
