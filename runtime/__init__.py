"""What continues a run after a decision: Python agents on pydantic-ai (later, Mastra servers)."""

from runtime.agents import AgentMap, AgentsNotLoadable, load_agents
from runtime.python_runtime import InvalidResumeData, PythonRuntime, now_ms

__all__ = [
    "AgentMap",
    "AgentsNotLoadable",
    "InvalidResumeData",
    "PythonRuntime",
    "load_agents",
    "now_ms",
]
