"""Who is asking, and what they may see and do.

    viewer    queries
    approver  queries, and decisions (approve, decline, resume)
    admin     everything: also starting runs and reconciling

A scope limits a caller to runs of some resources and/or some agents (a run must match
every part given). It is applied in the database query itself, so totals and pages count
only what the caller may see; a run outside it answers exactly as an unknown run does.

Scopes fail closed: a caller whose credentials state no scope gets `Scope.NONE` (no run,
no agent), and only credentials that say "all" get `Scope.ALL`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar

from graphql import GraphQLError

from suspended_runs.resolvers.people import GROUP_PREFIX, canonical
from suspended_runs.storage import RunEntry, RunFilter


class Role(StrEnum):
    VIEWER = "viewer"
    APPROVER = "approver"
    ADMIN = "admin"


_RANK = {Role.VIEWER: 0, Role.APPROVER: 1, Role.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class Scope:
    resource_ids: frozenset[str] | None = None
    agent_ids: frozenset[str] | None = None
    """None: any. An empty set: none. Build a scope as `Scope.ALL`, `Scope.NONE`, or with
    the parts that credentials give; `Scope()` is `Scope.ALL`."""

    ALL: ClassVar[Scope]
    """Every run: only for credentials that say "all" (and an open server)."""
    NONE: ClassVar[Scope]
    """No run at all: what credentials that state no scope get."""

    @property
    def unrestricted(self) -> bool:
        return self.resource_ids is None and self.agent_ids is None

    def allows(self, entry: RunEntry) -> bool:
        resources, agents = self.resource_ids, self.agent_ids
        return (resources is None or entry.resource_id in resources) and (
            agents is None or entry.agent_id in agents
        )

    def allows_agent(self, agent_id: str) -> bool:
        return self.agent_ids is None or agent_id in self.agent_ids

    def allows_resource(self, resource_id: str | None) -> bool:
        return self.resource_ids is None or resource_id in self.resource_ids

    def narrow(self, run_filter: RunFilter) -> RunFilter:
        return replace(run_filter, resource_ids=self.resource_ids, agent_ids=self.agent_ids)

    def covers(self, other: Scope) -> bool:
        """Whether every run `other` may see is one this scope may see."""
        return _within(other.resource_ids, self.resource_ids) and _within(
            other.agent_ids, self.agent_ids
        )


def _within(part: frozenset[str] | None, whole: frozenset[str] | None) -> bool:
    return whole is None or (part is not None and part <= whole)


Scope.ALL = Scope(resource_ids=None, agent_ids=None)
Scope.NONE = Scope(resource_ids=frozenset(), agent_ids=frozenset())


@dataclass(frozen=True, slots=True)
class Principal:
    subject: str
    role: Role | None
    """None: authenticated, but with no role this server knows: may do nothing."""
    scope: Scope = Scope.NONE
    """What runs the caller may see; a caller made without one sees none."""
    authenticated: bool = True
    expires_at: float | None = field(default=None, compare=False)
    """When its credentials stop being accepted (epoch seconds; a token's `exp` with the
    leeway): an open WebSocket connection is closed then. None: they do not expire."""
    groups: frozenset[str] = frozenset()
    """Its groups (a token's JWT_GROUPS_CLAIM, an API key's `groups`): review policies
    name them as `group:<name>`."""
    person: str = ""
    """The person behind the credentials, as compared (resolvers/people.py): `person:<name>`,
    or `key:<name>` for a key that names none. Unset: the subject, folded."""

    def __post_init__(self) -> None:
        if not self.person:
            object.__setattr__(self, "person", canonical(self.subject))

    def may(self, role: Role) -> bool:
        return self.role is not None and _RANK[self.role] >= _RANK[role]

    @property
    def names(self) -> frozenset[str]:
        """What a review policy may name the caller by: its credential, its person, and
        `group:<name>` for each of its groups."""
        groups = (GROUP_PREFIX + group for group in self.groups)
        return frozenset((canonical(self.subject), self.person, *groups))


OPEN_ACCESS = Principal(subject="anonymous", role=Role.ADMIN, scope=Scope.ALL, authenticated=False)
"""Who everyone is when no API keys and no JWT are configured."""


class ForbiddenQuery(GraphQLError):
    """A query by a caller whose role does not allow it (mutations answer `Forbidden`)."""

    def __init__(self, needed: Role) -> None:
        super().__init__(f"this needs the {needed.value} role", extensions={"code": "FORBIDDEN"})


def require(principal: Principal, role: Role) -> None:
    if not principal.may(role):
        raise ForbiddenQuery(role)
