"""The settings of reviews, beside the rest of the server's: the review policies (who
decides what, resolvers/review_policies.py) and how long one review may last
(resolvers/run_reviews.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, Field


class ReviewSettings(BaseModel):
    """Mixed into `Settings`; read from the same environment."""

    review_policies: str = Field("", description="JSON list of review policies.")
    review_policies_file: Path | None = Field(None, description="A file of review policies.")
    review_starter_context_key: str | None = Field(
        None, description="Where a Mastra run's request context names who started it."
    )
    review_max_minutes: float = Field(
        60.0,
        ge=1,
        description="The longest review one startReview starts (its default is 15 minutes).",
    )

    confirm_every_approval: bool = Field(
        False, description="Clients confirm every approval, not only a destructive tool's."
    )

    @property
    def review_max(self) -> timedelta:
        return timedelta(minutes=self.review_max_minutes)
