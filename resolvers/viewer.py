"""`viewer`: who the caller is to this server, so that a page shows only what they may do.

It needs no role: a caller with credentials this server accepts may always ask who it
takes them for (a role it does not know is `None`, and may do nothing else).
"""

from __future__ import annotations

from dataclasses import dataclass

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context


@dataclass(frozen=True, slots=True)
class Caller:
    subject: str
    """The name decisions are recorded under: `key:<name>`, `jwt:<sub>`, or on an open
    server `anonymous:<the actor header's name>` (else `anonymous`)."""
    role: Role | None
    authenticated: bool
    """False on an open server (no API keys and no JWT configured)."""
    person: str
    """The person behind the credentials (`person:<name>`, or a key that names none)."""


def viewer(context: Context) -> Caller:
    principal = context.principal
    return Caller(
        subject=context.actor,
        role=principal.role,
        authenticated=principal.authenticated,
        person=context.person,
    )
