"""What every resolver gets from the server: the storage handle, per request."""

from __future__ import annotations

from dataclasses import dataclass

from storage import Storage


@dataclass(frozen=True, slots=True)
class Context:
    storage: Storage
