"""`Charged`: what every mutation field takes from its request's budget before it runs."""

from __future__ import annotations

from typing import Any

from strawberry.extensions import FieldExtension
from strawberry.extensions.field_extension import AsyncExtensionResolver
from strawberry.types import Info

from suspended_runs import resolvers

ContextInfo = Info[resolvers.Context, Any]


class Charged(FieldExtension):
    """A mutation field takes one from the request's budget before it runs."""

    async def resolve_async(
        self, next_: AsyncExtensionResolver, source: Any, info: ContextInfo, **kwargs: Any
    ) -> Any:
        info.context.budget.take_mutation()
        return await next_(source, info, **kwargs)
