"""What every resolver gets from the server, per request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from suspended_runs.resolvers.access import Principal
from suspended_runs.resolvers.budget import RequestBudget
from suspended_runs.resolvers.live_pages import LivePages
from suspended_runs.resolvers.people import People
from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.runtime import Runtimes
from suspended_runs.runtime.webhooks.addresses import OutboundRules
from suspended_runs.storage import Storage
from suspended_runs.storage.events.webhooks import WebhookCaps


@dataclass(frozen=True, slots=True)
class WebhookRules:
    outbound: OutboundRules = field(default_factory=lambda: OutboundRules(production=False))
    rotation: timedelta = timedelta(days=1)
    caps: WebhookCaps = field(default_factory=WebhookCaps)


@dataclass(frozen=True, slots=True)
class Context:
    storage: Storage
    runtimes: Runtimes
    principal: Principal
    actor: str
    """Who is asking, as the audit log records it: the authenticated subject, else a header."""
    policy: DecisionPolicy = field(default_factory=DecisionPolicy)
    budget: RequestBudget = field(default_factory=RequestBudget)
    """What this request may still cost (rows, mutations) and how large its texts may be."""
    webhooks: WebhookRules = field(default_factory=WebhookRules)
    """How webhooks are checked as they are made, and how long a rotated secret signs."""
    live: LivePages | None = None
    """The shared feeds of subscriptions (None where nothing subscribes: scripts, tests)."""
    shared: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    """Answers read once per request however many aliases ask them (`once`)."""
    loaders: dict[str, Any] = field(default_factory=dict)
    """The request's batch loaders, by name (one read for a page's runs)."""
    people: People = field(default_factory=People)
    """Who stands behind each credential now: stored subjects are read as people by it."""

    @property
    def person(self) -> str:
        """The caller's person, as the audit log records it (on an open server, the actor
        its header names)."""
        return self.principal.person if self.principal.authenticated else self.actor

    def is_caller(self, stored: str) -> bool:
        """Whether a stored subject (`createdBy`, `startedBy`, ...) is the caller's person."""
        return self.people.same(stored, self.principal.person)

    def once(self, key: str, read: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]:
        """`read()`'s answer, read at most once in this request (aliases resolve at once,
        so the first starts the read and the others wait for it)."""
        if key not in self.shared:
            self.shared[key] = asyncio.ensure_future(read())
        return self.shared[key]
