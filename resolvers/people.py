"""People: who stands behind a credential, so that one person is one reviewer.

A caller presents a credential, an API key (`key:<name>`) or a token (`jwt:<sub>`), and
is a person (`person:<name>`): the `person` its key entry names, or the token's subject
(JWT_SUBJECT_CLAIM), or whom JWT_PERSONS maps that subject to. A key that names no person
is its own person, `key:<name>`. A quorum counts people, four eyes compare people, and
idempotency keys are a person's.

A JWT_PERSONS key with a space in it is `<issuer> <subject>`: it maps only the tokens of
that subject whose `iss` is that issuer (one issuer's subjects may be another's), before
a plain `<subject>` entry. Such a token is the credential `jwt:<issuer> <subject>`, so
that what it stores (an approval, `startedBy`) names its issuer and is read as the same
person later; a token whose own subject reads as such an entry is refused, or it would
be another issuer's subject.

Names compare folded (`fold`): Unicode NFKC, case folded, format characters (zero-width
spaces and joiners, direction marks) removed; so `Alice`, `alice` and `alice` with a
zero-width space are one name. A name with whitespace around it is refused where it is
written (the key file, JWT_PERSONS, a token's subject), never trimmed into another name.

What was stored under credentials (approvals, `startedBy`, `decidedBy`, `createdBy`, the
audit log, idempotency keys) is not rewritten: `People.person_of` reads a stored subject
as the person it is under the mapping in force now. Where a record is found by its
credential's exact spelling (an idempotency key), `People.credentials_of` names the
spellings to look under: the caller's own, and those the configuration writes for the
person; a spelling neither names (a token's `Bob` where the files say `bob`) is found
only by the credential that presents it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

KEY_PREFIX, TOKEN_PREFIX, PERSON_PREFIX = "key:", "jwt:", "person:"
GROUP_PREFIX = "group:"
SUBJECT_PREFIXES = (KEY_PREFIX, TOKEN_PREFIX, PERSON_PREFIX)
"""The subjects that name someone: a key, a token's subject, a person."""


def fold(name: str) -> str:
    """`name` as names are compared: NFKC, case folded, without format characters."""
    visible = "".join(c for c in unicodedata.normalize("NFKC", name) if not _format(c))
    return unicodedata.normalize("NFKC", visible.casefold())


def _format(char: str) -> bool:
    return unicodedata.category(char) == "Cf"


def refusal(name: str) -> str | None:
    """Why `name` cannot name someone (None: it can): whitespace around it, as written or
    once folded, or nothing left once folded."""
    folded = fold(name)
    if name != name.strip() or folded != folded.strip():
        return f"{name!r} has whitespace around it"
    if not folded:
        return f"{name!r} is empty once folded"
    return None


def canonical(subject: str) -> str:
    """A subject as subjects are compared: the name after `key:`, `jwt:` or `person:`
    folded; any other subject as it is."""
    for prefix in SUBJECT_PREFIXES:
        if subject.startswith(prefix):
            return prefix + fold(subject[len(prefix) :])
    return subject


@dataclass(frozen=True, slots=True)
class People:
    """The mapping from credentials to people in force: the key file's `person`s and
    JWT_PERSONS. Empty, every key is its own person and every token its subject's."""

    keys: Mapping[str, str] = field(default_factory=dict)
    """Folded key name -> its person's subject, for the keys that name a person."""
    tokens: Mapping[str, str] = field(default_factory=dict)
    """Folded token subject, or `<issuer> <subject>`, -> the person's name JWT_PERSONS
    gives it."""
    spelt: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Person (as compared) -> credentials as the configuration writes them for that
    person (`spellings`): records are stored under such spellings, not folded ones."""

    def person_of(self, subject: str) -> str:
        """The person (as compared) behind a subject, stored or presented now."""
        if subject.startswith(KEY_PREFIX):
            name = fold(subject[len(KEY_PREFIX) :])
            return self.keys.get(name, KEY_PREFIX + name)
        if subject.startswith(TOKEN_PREFIX):
            return self.token_person(subject[len(TOKEN_PREFIX) :])
        return canonical(subject)

    def token_person(self, sub: str) -> str:
        name = fold(sub)
        return PERSON_PREFIX + fold(self.tokens.get(name, name))

    def token_credential(self, issuer: object, sub: str) -> str | None:
        """What follows `jwt:` in the credential of a token of `sub` from `issuer` (its
        `iss` claim, if a string): `<issuer> <subject>` when JWT_PERSONS names both, else
        the subject. None: the subject alone reads as an `<issuer> <subject>` entry."""
        qualified = f"{issuer} {sub}"
        if isinstance(issuer, str) and _one_word(issuer) and fold(qualified) in self.tokens:
            return qualified
        name = fold(sub)
        return None if " " in name and name in self.tokens else sub

    def same(self, subject: str, person: str) -> bool:
        """Whether the stored `subject` is the person `person` (as compared)."""
        return self.person_of(subject) == person

    def credentials_of(self, subject: str, person: str) -> list[str]:
        """The credentials, spelt as stored, under which the caller `subject` of `person`
        may have kept a record: `subject` first, then those the configuration spells for
        the person and a token of the person's name, each only if it is that person now
        (a key that names no one is its own person: `subject` alone). Never `person`
        itself, whose records are looked up as its own. A handful, looked up exactly."""
        spelt = set(self.spelt.get(person, ()))
        if person.startswith(PERSON_PREFIX):
            spelt.add(TOKEN_PREFIX + person[len(PERSON_PREFIX) :])
        ordered = [subject, *sorted(spelt - {subject})]
        return [held for held in ordered if held != person and self.same(held, person)]


def _one_word(text: str) -> bool:
    folded = fold(text)
    return folded.split() == [folded]


def key_people(entries: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """`People.keys` from (key name, person named) pairs; ValueError naming the entries
    when a name or person cannot name someone, or when two key names fold to one name
    without naming the same person (they would be one caller of two roles)."""
    persons: dict[str, str | None] = {}
    written: dict[str, str] = {}
    for name, person in entries:
        for what, text in (("key name", name), ("person", person)):
            if text is not None and (why := refusal(text)) is not None:
                raise ValueError(f"{what} {why}")
        folded = fold(name)
        mine = fold(person) if person is not None else None
        if folded in persons and (mine is None or persons[folded] != mine):
            raise ValueError(
                f"key names {written[folded]!r} and {name!r} are one name once folded (case, "
                "width, invisible characters): give both the same person, or rename one"
            )
        persons[folded], written[folded] = mine, name
    return {name: PERSON_PREFIX + person for name, person in persons.items() if person}


def spellings(
    keys: Iterable[tuple[str, str | None]], jwt_persons: Mapping[str, str]
) -> dict[str, frozenset[str]]:
    """`People.spelt` from (key name, person named) pairs and JWT_PERSONS, all as written:
    for each person, `key:<name>` of their keys; `jwt:<key>` of their JWT_PERSONS keys, and
    an `<issuer> <subject>` key's `jwt:<subject>` (how its tokens were stored before
    issuers were named); `jwt:<name>` for each way their name is written. Some may be
    another person's now: `People.credentials_of` keeps only the person's own."""
    found: dict[str, set[str]] = {}
    for name, person in keys:
        if person is not None:
            found.setdefault(PERSON_PREFIX + fold(person), set()).update(
                (KEY_PREFIX + name, TOKEN_PREFIX + person)
            )
    for sub, person in jwt_persons.items():
        found.setdefault(PERSON_PREFIX + fold(person), set()).update(
            TOKEN_PREFIX + text for text in (sub, sub.partition(" ")[2] or sub, person)
        )
    return {person: frozenset(held) for person, held in found.items()}


def token_people(mapping: Mapping[str, str]) -> dict[str, str]:
    """`People.tokens` from JWT_PERSONS (token subject, or `<issuer> <subject>`, ->
    person); ValueError naming what cannot name someone, a key with a space that is no
    `<issuer> <subject>`, or two keys that fold to one given different people."""
    folded: dict[str, str] = {}
    for sub, person in mapping.items():
        for text in (sub, person):
            if (why := refusal(text)) is not None:
                raise ValueError(why)
        name = fold(sub)
        issuer, _, subject = name.partition(" ")
        if subject and (not _one_word(issuer) or refusal(subject) is not None):
            raise ValueError(
                f"{sub!r} is not `<issuer> <subject>`: an issuer without whitespace, one "
                "space, then the subject"
            )
        if name in folded and folded[name] != fold(person):
            raise ValueError(f"subjects that fold to {name!r} are given different people")
        folded[name] = fold(person)
    return folded
