"""Python agents by id: the user's (`AGENTS=module:attribute`) or the offline demo set."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pydantic_ai import Agent

from suspended_runs.runtime.errors import AgentsNotLoadable

AgentMap = Mapping[str, Agent[Any, Any]]


def load_agents(spec: str) -> dict[str, Agent[Any, Any]]:
    """The mapping that `module:attribute` names, checked to hold only agents."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise AgentsNotLoadable(f"AGENTS must look like module:attribute, not {spec!r}")
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise AgentsNotLoadable(f"AGENTS={spec}: {exc}") from None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Agent) for k, v in value.items()
    ):
        raise AgentsNotLoadable(f"AGENTS={spec} is not a mapping of ids to pydantic_ai.Agent")
    return dict(value)
