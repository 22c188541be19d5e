"""The settings of people (resolvers/people.py), beside the rest of the server's: whom a
token's subject is, and how long a webhook waits for its token owner to be seen."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from suspended_runs.resolvers.people import token_people


class PeopleSettings(BaseModel):
    """Mixed into `Settings`; read from the same environment."""

    jwt_persons: dict[str, str] = Field(
        default_factory=dict,
        description="JSON: a token's subject, or its `<issuer> <subject>` (that issuer's "
        "tokens only, before a plain subject), -> the person it is (else the subject itself).",
    )
    webhook_owner_token_days: float = Field(
        30.0,
        gt=0,
        description="A webhook made with a token is disabled when its maker has presented "
        "no admin token for this many days.",
    )

    @field_validator("jwt_persons")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        token_people(value)  # raises ValueError, naming what cannot name a person
        return value
