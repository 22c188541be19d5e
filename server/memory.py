"""Large allocations given back to the system when freed.

A request body, its decoded text and its parsed tokens are each as large as the request
(up to MAX_REQUEST_BYTES). glibc's malloc serves blocks that large with mmap, and frees
them to the system, until the first such block is freed: then it raises its threshold
to that size, later blocks come from the heap, and the heap's high-water mark stays
resident. A server sent many distinct large queries kept hundreds of megabytes that way,
though every cache it has is bounded. Fixing the threshold (`mallopt(M_MMAP_THRESHOLD)`)
turns that adjustment off, as MALLOC_MMAP_THRESHOLD_ in the environment would.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024
"""glibc's own starting value: blocks of this size and more are mmapped."""


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
