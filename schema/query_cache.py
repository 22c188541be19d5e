"""Parsed and validated documents, kept by query text within a budget in bytes.

A client chooses the query texts, so a cache keyed by them is a cache whose size the
client chooses: counting entries bounds nothing when one entry is a megabyte of text
and its syntax tree. Every cache keyed by request text (the parse, the validation, the
operation's name for the metrics, whether an answer may carry an ETag) reads one
`QueryCache`, which charges each entry what it holds (its text, its nodes and its
errors, estimated from their count) and forgets the least recently used entries once
`QUERY_CACHE_BYTES` is spent.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from graphql import DocumentNode, GraphQLError, GraphQLSchema, Node, parse
from graphql.validation import ASTValidationRule
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

DEFAULT_BYTES = 16 * 1024 * 1024
NODE_BYTES = 320
"""What one syntax node costs with its location, rounded up."""
TOKEN_BYTES = 160
"""What one token costs (graphql-core keeps every token of a document, linked)."""
ERROR_BYTES = 1024
ENTRY_BYTES = 4096
"""An entry's own keeping (its key, its place in the order), with room."""


@dataclass(slots=True)
class _Entry:
    document: DocumentNode
    cost: int
    validated: dict[int, list[GraphQLError]] = field(default_factory=dict)
    """Errors by the schema they were validated against."""


class QueryCache:
    """Least recently used documents, at most `max_bytes` of them in all (and at most
    `max_entries`, the deprecated QUERY_CACHE_SIZE, when set)."""

    def __init__(self, max_bytes: int = DEFAULT_BYTES, max_entries: int | None = None) -> None:
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.bytes = 0
        self._entries: OrderedDict[tuple[str, int | None], _Entry] = OrderedDict()
        self._lock = threading.Lock()  # the ETag check and the executor may run in threads

    def __len__(self) -> int:
        return len(self._entries)

    def document(self, query: str, max_tokens: int | None = None) -> DocumentNode:
        """The parsed `query`; raises GraphQLError as `graphql.parse` does (a document
        that fails is not kept)."""
        return self._entry(query, max_tokens).document

    def validate(
        self,
        schema: GraphQLSchema,
        query: str,
        max_tokens: int | None,
        rules: tuple[type[ASTValidationRule], ...],
    ) -> list[GraphQLError]:
        """The validation errors of `query` against `schema`, by `rules`. Kept by schema
        alone: a schema's rules follow from its extensions, though some (the depth
        limiter's) are new classes every request."""
        entry = self._entry(query, max_tokens)
        errors = entry.validated.get(id(schema))
        if errors is None:
            errors = validate_document(schema, entry.document, rules)
            with self._lock:
                entry.validated[id(schema)] = errors
                added = ERROR_BYTES * (len(errors) + 1)
                entry.cost += added
                if self._entries.get((query, max_tokens)) is entry:
                    self.bytes += added
                    self._evict()
        return errors

    def _entry(self, query: str, max_tokens: int | None) -> _Entry:
        key = (query, max_tokens)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                return entry
        document = parse(query, max_tokens=max_tokens)
        _unlink_tokens(document)
        entry = _Entry(document, ENTRY_BYTES + sys.getsizeof(query) + _tree_bytes(document))
        with self._lock:
            if entry.cost <= self.max_bytes and key not in self._entries:
                self._entries[key] = entry
                self.bytes += entry.cost
                self._evict()
        return entry

    def _evict(self) -> None:
        while self._entries and (
            self.bytes > self.max_bytes
            or (self.max_entries is not None and len(self._entries) > self.max_entries)
        ):
            _, oldest = self._entries.popitem(last=False)
            self.bytes -= oldest.cost


def _unlink_tokens(document: DocumentNode) -> None:
    """Cut each token's link to the one before it. The parser needs it; nothing after
    does, and with it every document is a cycle (token to token), which only the cyclic
    collector frees: documents forgotten by the cache (a megabyte of text each) would
    wait for it, so the server's memory grew with every distinct large query."""
    token = document.loc.start_token if document.loc else None
    while token is not None:
        token.prev = None
        token = token.next


def _tree_bytes(document: DocumentNode) -> int:
    """What the syntax tree holds beyond the query text: its nodes, its tokens (every one,
    comments too, linked from the document's location) and the strings copied out of the
    text (names, string values, comments), each counted once."""
    total, counted, stack = 0, set[int](), list[Node]([document])
    while stack:
        node = stack.pop()
        total += NODE_BYTES
        for key in node.keys:
            value = getattr(node, key, None)
            if isinstance(value, Node):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(item for item in value if isinstance(item, Node))
            elif isinstance(value, str) and id(value) not in counted:
                counted.add(id(value))
                total += sys.getsizeof(value)
    token = document.loc.start_token if document.loc else None
    while token is not None:
        total += TOKEN_BYTES
        if token.value is not None and id(token.value) not in counted:
            counted.add(id(token.value))
            total += sys.getsizeof(token.value)
        token = token.next
    return total


class CachedDocuments(SchemaExtension):
    """Strawberry's parse and validation steps through a `QueryCache` (in place of its
    ParserCache and ValidationCache, which count entries). Pass as a factory."""

    def __init__(self, cache: QueryCache) -> None:
        super().__init__()
        self.cache = cache

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        if context.query:
            # A document that fails is parsed again by Strawberry, which reports the error.
            with contextlib.suppress(GraphQLError):
                context.graphql_document = self.cache.document(
                    context.query, context.parse_options.get("max_tokens")
                )
        yield

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.query and context.graphql_document is not None:
            context.pre_execution_errors = self.cache.validate(
                context.schema._schema,
                context.query,
                context.parse_options.get("max_tokens"),
                tuple(context.validation_rules),
            )
        yield
