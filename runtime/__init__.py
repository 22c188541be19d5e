"""What continues a run after a decision: Python agents on pydantic-ai (later, Mastra servers)."""

from runtime.agents import AgentMap, AgentsNotLoadable, load_agents
from runtime.mastra import MastraClient, MastraRuntime, MastraServers, MastraUnavailable, StreamEnd
from runtime.python_runtime import InvalidResumeData, PythonRuntime, now_ms

__all__ = [
    "AgentMap",
    "AgentsNotLoadable",
    "InvalidResumeData",
    "MastraClient",
    "MastraRuntime",
    "MastraServers",
    "MastraUnavailable",
    "PythonRuntime",
    "StreamEnd",
    "load_agents",
    "now_ms",
]
