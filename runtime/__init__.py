"""What continues a run after a decision: Python agents (pydantic-ai), Mastra servers and
LangGraph graphs, behind one interface (`AgentRuntime`), chosen per run by its `runtime`."""

from suspended_runs.runtime.agents import AgentMap, load_agents
from suspended_runs.runtime.background import Background
from suspended_runs.runtime.claims import ClaimKeeper, now_ms
from suspended_runs.runtime.errors import (
    AgentsNotLoadable,
    ArgsRejected,
    ConfigurationError,
    ContinuationError,
    NotApplied,
    OutcomeUncertain,
    ResumeDataRejected,
    SnapshotMissing,
)
from suspended_runs.runtime.langgraph import LangGraphRuntime
from suspended_runs.runtime.mastra import MastraClient, MastraRuntime, MastraServers, StreamEnd
from suspended_runs.runtime.protocol import AgentRuntime, Capabilities, Continuation
from suspended_runs.runtime.python_runtime import PythonRuntime
from suspended_runs.runtime.runtimes import Runtimes

__all__ = [
    "AgentMap",
    "AgentRuntime",
    "AgentsNotLoadable",
    "ArgsRejected",
    "Background",
    "Capabilities",
    "ClaimKeeper",
    "ConfigurationError",
    "Continuation",
    "ContinuationError",
    "LangGraphRuntime",
    "MastraClient",
    "MastraRuntime",
    "MastraServers",
    "NotApplied",
    "OutcomeUncertain",
    "PythonRuntime",
    "ResumeDataRejected",
    "Runtimes",
    "SnapshotMissing",
    "StreamEnd",
    "load_agents",
    "now_ms",
]
