"""Review policies as written (resolvers/review_policies.py): the examples of
docs/reviews.md load as the server loads them, and a reviewer spelt otherwise stops the
start."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from suspended_runs.resolvers.access import Principal, Role
from suspended_runs.resolvers.review_policies import ReviewPolicies
from suspended_runs.server import Settings
from suspended_runs.server.auth import Authenticator, load_api_keys
from tests.builders import SECRET_SETTING
from tests.helpers import ROOT

JSON_FENCE = re.compile(r"^```json\n(.*?)^```", re.M | re.S)


def documented() -> tuple[list[Any], list[Any], dict[str, str]]:
    """docs/reviews.md's JSON examples: its policies, its key file and its JWT_PERSONS."""
    examples = [
        json.loads(m[1]) for m in JSON_FENCE.finditer((ROOT / "docs/reviews.md").read_text())
    ]
    [policies] = [e for e in examples if isinstance(e, list) and "agentId" in e[0]]
    [keys] = [e for e in examples if isinstance(e, list) and "sha256" in e[0]]
    [persons] = [e for e in examples if isinstance(e, dict)]
    return policies, keys, persons


def test_the_documented_policies_and_people_load_as_they_say(tmp_path: Path) -> None:
    written, keys, persons = documented()
    policies = ReviewPolicies.parse(written)
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    settings = Settings(jwt_secret=SECRET_SETTING, jwt_persons=persons)
    people = Authenticator(load_api_keys(tmp_path / "keys.json"), settings.jwt_config).people
    partner = "https://sso.partner.example/"
    assert people.token_credential(partner, "1042") == f"{partner} 1042"
    assert people.token_credential("https://elsewhere.example/", "1042") == "1042"
    assert people.token_credential("https://elsewhere.example/", f"{partner} 1042") is None
    credentials = ["key:alice-laptop", "key:alice-ci", "jwt:auth0|6512c0ffee", "jwt:alice"]
    credentials.append(f"jwt:{partner} 1042")
    assert {people.person_of(subject) for subject in credentials} == {"person:alice"}
    assert people.person_of("key:ci-bot") == "key:ci-bot"
    assert people.person_of("jwt:1042") == "person:bob"
    policy = policies.match("file-cleaner", "delete_file")
    assert policy is not None and policy.label == "review policy 'file deletions'"
    now = datetime.now(UTC)
    for subject, person, allowed in [
        ("jwt:alice", "person:alice", True),  # person:alice: every credential of alice
        ("key:ci-bot", "key:ci-bot", True),
        ("key:bob-laptop", "person:bob", False),  # jwt:bob is bob's tokens, not his keys
        ("jwt:bob", "person:bob", True),
    ]:
        caller = Principal(subject, Role.APPROVER, person=person)
        assert policy.allows(caller.names, now, now) is allowed, subject


@pytest.mark.parametrize(
    ("reviewer", "problem"),
    [
        ("token:bob", "'token:bob' is not a reviewer: key:<name>, jwt:<sub>, person:<name>"),
        ("alice", "'alice' is not a reviewer"),
        ("key: alice", "reviewer ' alice' has whitespace around it"),
        ("person:\u200b", "is empty once folded"),
        ("group:", "is empty once folded"),
    ],
)
def test_a_reviewer_spelt_otherwise_is_one_line_naming_it(reviewer: str, problem: str) -> None:
    with pytest.raises(ValueError) as refused:
        ReviewPolicies.parse(
            [{"approvals": 2}, {"escalateAfterSeconds": 1, "escalateTo": [reviewer]}]
        )
    assert str(refused.value).startswith("REVIEW_POLICIES[1]: ") and problem in str(refused.value)
    assert "\n" not in str(refused.value)
