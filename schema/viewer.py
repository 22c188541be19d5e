"""`Viewer`: who is asking, and with what role: what a page needs to offer only the
actions the caller may take."""

from __future__ import annotations

import strawberry

from suspended_runs import resolvers

# Registers the enum's description; fields name resolvers.Role itself (as agent_run.py does).
Role = strawberry.enum(
    resolvers.Role,
    description="viewer: queries; approver: also decisions and cancelRun; admin: everything.",
)


@strawberry.type(description="The caller, as this server takes them.")
class Viewer:
    subject: str = strawberry.field(
        description="The name decisions are recorded under: key:<name>, jwt:<sub>, or on an "
        "open server the actor header's name (else anonymous)."
    )
    role: resolvers.Role | None = strawberry.field(
        description="Null: credentials with no role this server knows (they may do nothing)."
    )
    authenticated: bool = strawberry.field(
        description="False on an open server (no API keys and no JWT configured)."
    )
    person: str = strawberry.field(
        description="The person behind the credentials, as quorums count and four eyes "
        "compare them: person:<name> (a key's `person`, a token's subject), or key:<name> "
        "for a key that names none; names folded (case, width, invisible characters)."
    )

    @classmethod
    def from_caller(cls, caller: resolvers.Caller) -> Viewer:
        return cls(
            subject=caller.subject,
            role=caller.role,
            authenticated=caller.authenticated,
            person=caller.person,
        )
