"""The user's LangGraph graphs (LANGGRAPH_GRAPHS), built once with a `MongoDBSaver` on the
collections the follower reads, and run on an executor of their own.

Resuming a thread needs its compiled graph: the documents cannot continue it. The saver
is synchronous, so a graph runs on a bounded pool of threads (LANGGRAPH_RESUME_THREADS),
never on the event loop or its default executor. Every resume is strict (LangGraph's own
check that the interrupts answered are the ones pending, made before it writes anything).
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from suspended_runs.runtime.errors import ConfigurationError
from suspended_runs.runtime.metrics import GRAPHS_RUNNING, GRAPHS_RUNNING_MOST
from suspended_runs.storage import LangGraphCheckpoints

T = TypeVar("T")
_UNNAMED = "LangGraph"
"""A compiled graph's name when none was given (its runs carry no `lc_agent_name`)."""
_STRICT_RESUME = "__pregel_strict_resume"
"""LangGraph's configurable key of a strict resume (`CONFIG_KEY_STRICT_RESUME`)."""


@dataclass(slots=True)
class LangGraphGraphs:
    """Compiled graphs by agent id, and the executor they run on."""

    graphs: Mapping[str, Any] = field(default_factory=dict)
    threads: int = 4
    client: Any = None
    """The saver's (synchronous) MongoDB client, closed with the graphs."""
    running: int = 0
    """Graphs running on the threads now."""
    most: int = 0
    _executor: ThreadPoolExecutor | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __contains__(self, agent_id: str) -> bool:
        return agent_id in self.graphs

    async def run(self, work: Callable[[], T]) -> T:
        """`work` on the graphs' own threads."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix="langgraph")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._counted(work))

    def _counted(self, work: Callable[[], T]) -> Callable[[], T]:
        def running() -> T:
            with self._lock:
                self.running += 1
                self.most = max(self.most, self.running)
                GRAPHS_RUNNING.set(self.running)
                GRAPHS_RUNNING_MOST.set(self.most)
            try:
                return work()
            finally:
                with self._lock:
                    self.running -= 1
                    GRAPHS_RUNNING.set(self.running)

        return running

    def resume(self, agent_id: str, thread_id: str, answers: dict[str, Any]) -> Any:
        """Answer interrupts of `thread_id` by their ids (on a graph thread)."""
        from langgraph.types import Command

        config = {"configurable": {"thread_id": thread_id, _STRICT_RESUME: True}}
        return self.graphs[agent_id].invoke(Command(resume=answers), config)

    def start(self, agent_id: str, prompt: str, thread_id: str, metadata: dict[str, Any]) -> Any:
        """Invoke a graph whose input is a message list with `prompt` (on a graph thread)."""
        config = {"configurable": {"thread_id": thread_id}, "metadata": metadata}
        message = {"role": "user", "content": prompt}
        return self.graphs[agent_id].invoke({"messages": [message]}, config)

    def takes_messages(self, agent_id: str) -> bool:
        """Whether a graph's input has a `messages` channel (`create_agent`'s do)."""
        schema = self.graphs[agent_id].get_input_jsonschema()
        return "messages" in (schema.get("properties") or {})

    def tool(self, agent_id: str, name: str | None) -> Any:
        """The graph's tool `name` (a `create_agent` graph's tools node), if it has one."""
        node = getattr(self.graphs[agent_id], "nodes", {}).get("tools")
        tools = getattr(getattr(node, "bound", None), "tools_by_name", {})
        return tools.get(name) if isinstance(tools, dict) else None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        if self.client is not None:
            self.client.close()


def load_graphs(
    specs: Mapping[str, str], uri: str, checkpoints: LangGraphCheckpoints | None, threads: int
) -> LangGraphGraphs:
    """Each graph of LANGGRAPH_GRAPHS (`agent id -> module:factory`), built by calling its
    factory with a `MongoDBSaver` on LANGGRAPH_DB. Raises ConfigurationError naming the
    setting for anything it cannot use."""
    if not specs:
        return LangGraphGraphs(threads=threads)
    if checkpoints is None:
        raise ConfigurationError(
            "LANGGRAPH_GRAPHS: set LANGGRAPH_DB, the database its saver writes"
        )
    try:
        from langgraph.checkpoint.mongodb import MongoDBSaver
        from pymongo import MongoClient
    except ImportError:
        raise ConfigurationError(
            "LANGGRAPH_GRAPHS needs the langgraph extra: pip install 'suspended-runs[langgraph]'"
        ) from None
    client: MongoClient[Any] = MongoClient(uri, tz_aware=True)
    saver = MongoDBSaver(
        client,
        db_name=checkpoints.database,
        checkpoint_collection_name=checkpoints.checkpoints,
        writes_collection_name=checkpoints.writes,
    )
    try:
        built = {agent: _built(agent, spec, saver) for agent, spec in specs.items()}
    except ConfigurationError:
        client.close()
        raise
    return LangGraphGraphs(built, threads, client)


def _built(agent_id: str, spec: str, saver: Any) -> Any:
    module_name, _, name = spec.partition(":")
    where = f"LANGGRAPH_GRAPHS[{agent_id!r}]={spec}"
    if not module_name or not name:
        raise ConfigurationError(f"{where}: name a factory as package.module:factory")
    try:
        factory = getattr(importlib.import_module(module_name), name)
        graph = factory(saver)
    except Exception as exc:  # the user's code: any failure is a setting it cannot use
        raise ConfigurationError(f"{where}: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(graph, "invoke", None)):
        raise ConfigurationError(f"{where}: the factory did not return a compiled graph")
    named = getattr(graph, "name", None)
    if isinstance(named, str) and named not in (agent_id, _UNNAMED):
        # create_agent(name=...) writes it as lc_agent_name: its runs are listed as that agent.
        raise ConfigurationError(
            f"{where}: the graph is named {named!r}, which its runs are listed under: "
            f"register it as {named!r}"
        )
    return graph


def on_thread(work: Callable[..., T], *args: Any) -> Callable[[], T]:
    return partial(work, *args)
