"""What every resolver gets from the server, per request."""

from __future__ import annotations

from dataclasses import dataclass

from resolvers.access import Principal
from runtime import MastraRuntime, PythonRuntime
from storage import Storage


@dataclass(frozen=True, slots=True)
class Context:
    storage: Storage
    runtime: PythonRuntime
    mastra: MastraRuntime
    principal: Principal
    actor: str
    """Who is asking, as the audit log records it: the authenticated subject, else a header."""
