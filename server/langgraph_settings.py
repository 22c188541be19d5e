"""The settings of LangGraph's threads (LANGGRAPH_*), beside the rest of the server's: where
a `MongoDBSaver` writes, and how its threads' metadata is read."""

from __future__ import annotations

from pydantic import BaseModel, Field

from suspended_runs.storage import LangGraphCheckpoints, ThreadReading


class LangGraphSettings(BaseModel):
    """Mixed into `Settings`; read from the same environment."""

    langgraph_db: str | None = Field(
        None, description="The database a MongoDBSaver writes; unset: no LangGraph runs."
    )
    langgraph_checkpoints_collection: str = Field("checkpoints", min_length=1)
    langgraph_writes_collection: str = Field("checkpoint_writes", min_length=1)
    langgraph_default_agent: str = Field(
        "langgraph",
        min_length=1,
        description="Agent id of a thread whose metadata names none (lc_agent_name, agent_id).",
    )
    langgraph_resource_key: str = Field(
        "user_id", min_length=1, description="The metadata key of a thread's resource id."
    )
    langgraph_create_index: bool | None = Field(
        None,
        description="Build the index on the writes at start; unset: true outside production.",
    )
    langgraph_walk_limit: int = Field(
        200, ge=1, description="Most checkpoints followed back to an invocation's input."
    )
    langgraph_graphs: dict[str, str] = Field(
        default_factory=dict,
        description="JSON: agent id -> package.module:factory, factory(checkpointer) -> graph.",
    )
    langgraph_resume_threads: int = Field(
        4, ge=1, le=64, description="Threads LangGraph graphs run on (the saver is synchronous)."
    )

    def creates_langgraph_index(self, production: bool) -> bool:
        """Whether a start builds the index on the writes (LANGGRAPH_CREATE_INDEX, else
        outside production only: building it holds the user's collection a while)."""
        wanted = self.langgraph_create_index
        return wanted if wanted is not None else not production

    def langgraph_checkpoints(self, starter_key: str | None) -> LangGraphCheckpoints | None:
        """Where LangGraph's threads are followed from (None: LANGGRAPH_DB unset)."""
        if not self.langgraph_db:
            return None
        return LangGraphCheckpoints(
            database=self.langgraph_db,
            checkpoints=self.langgraph_checkpoints_collection,
            writes=self.langgraph_writes_collection,
            reading=ThreadReading(
                default_agent=self.langgraph_default_agent,
                resource_key=self.langgraph_resource_key,
                starter_key=starter_key,
            ),
            walk_limit=self.langgraph_walk_limit,
        )
