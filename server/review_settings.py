"""The settings of reviewing together (resolvers/run_reviews.py), beside the rest of the
server's: how long one review may last."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field


class ReviewSettings(BaseModel):
    """Mixed into `Settings`; read from the same environment."""

    review_max_minutes: float = Field(
        60.0,
        ge=1,
        description="The longest review one startReview starts (its default is 15 minutes).",
    )

    @property
    def review_max(self) -> timedelta:
        return timedelta(minutes=self.review_max_minutes)
