"""Large allocations given back to the system when freed, and freed soon.

A request body, its decoded text and its parsed tokens are each as large as the request
(up to MAX_REQUEST_BYTES). glibc's malloc serves blocks that large with mmap, and frees
them to the system, until the first such block is freed: then it raises its threshold
to that size, later blocks come from the heap, and the heap's high-water mark stays
resident. A server sent many distinct large queries kept hundreds of megabytes that way,
though every cache it has is bounded. Fixing the threshold (`mallopt(M_MMAP_THRESHOLD)`)
turns that adjustment off, as MALLOC_MMAP_THRESHOLD_ in the environment would.

Freed, though, only once nothing refers to them, and every request leaves reference
cycles behind (graphql-core's validation rules hold their bound methods, and through
their context the document, its source text and its tokens; Strawberry's extensions hold
the execution context, and it the query text). Only the cyclic collector frees those, and
its oldest generation, where a request's cycles end up, runs by counts of objects, not by
the bytes they hold: a few hundred objects a request, each request's a megabyte or more.
`RequestGarbage` runs a full collection after every `GARBAGE_AFTER_BYTES` of request
bodies (WebSocket messages included), so what requests leave behind stays within a few
times that. `freeze_startup_objects` moves what the server holds from its start (modules,
the schema) out of the collector's sight, so a full collection walks only what came since.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import time

log = logging.getLogger(__name__)

_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024
"""glibc's own starting value: blocks of this size and more are mmapped."""
GARBAGE_AFTER_BYTES = 8 * 1024 * 1024
"""Bytes of request bodies between two full collections. One full collection costs about
what parsing a large query does; small requests reach this only after thousands."""
COLLECTING_SHARE = 0.1
"""Most of the time spent in these collections: one waits until ten times the last one's
length has passed, so a flood of large queries cannot make the server mostly collect."""


class RequestGarbage:
    """Counts the bytes of request bodies; past `after_bytes`, one full collection.
    Called on the event loop only (as bodies are decoded), so it needs no lock."""

    def __init__(self, after_bytes: int = GARBAGE_AFTER_BYTES) -> None:
        self.after_bytes = after_bytes
        self.collections = 0
        self._received = 0
        self._next_allowed = 0.0

    def received(self, size: int) -> None:
        self._received += size
        if self._received < self.after_bytes or time.monotonic() < self._next_allowed:
            return
        self._received = 0
        self.collections += 1
        started = time.monotonic()
        gc.collect()
        ended = time.monotonic()
        self._next_allowed = ended + (ended - started) * (1 / COLLECTING_SHARE - 1)


def freeze_startup_objects() -> None:
    """Collect once, then leave what survives to the end of the process: what a server
    holds from its start is never garbage, and every full collection would walk it."""
    gc.collect()
    gc.freeze()


def return_large_blocks() -> bool:
    """Fix glibc's mmap threshold; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        mallopt = None
    if mallopt is None:
        log.info("not glibc: large allocations are left to the C library's own rule")
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
