"""`scripts/bench --slow-bodies`: what slow request bodies from one client cost the others.

On a fresh embedded MongoDB holding 1,000 runs of 20 agents, `--clients` pollers (from
127.0.0.1, each on a kept connection) ask their agent's first page every
`--slow-poll-every` seconds, first with nothing else going on, then while one client
(from 127.0.0.2, another address as far as the server can tell) keeps
`--slow-connections` connections each sending a POST body of 100,000 bytes a byte every
`--slow-byte-every` seconds, and opening it again about that long after the server
closes or refuses it. `--slow-rounds` rounds of both phases; printed for each
server: the medians of the rounds' median and p99 of the polls in each phase and their
ratio, the most descriptors the server held in each, and how many slow connections it
held (the rounds' median); once with the limits as set (`--slow-cap` connections per
address) and once with them out of reach, as before they existed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import resource
import statistics
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

T = TypeVar("T")
ATTACKER = "127.0.0.2"
HEADERS = (
    b"POST /graphql HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
    b"content-length: 100000\r\n\r\n{"
)
OUT_OF_REACH = {
    "MAX_CONNECTIONS_PER_PEER": "1000000",
    "MAX_CONNECTIONS": "1000000",
    "BODY_TIMEOUT_SECONDS": "86400",
    "BODY_MIN_BYTES_PER_SECOND": "0",
}
"""The limits of server/http_protocol.py set where no client meets them."""


def enough_descriptors(needed: int) -> str:
    """Raises the soft limit of open files to `needed` if it is lower (this process's, and
    so the server's it starts); what `ulimit -n` was and is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise SystemExit(f"ulimit -n: {soft} (hard {hard}), and {needed} are needed")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return f"{soft}, raised to {needed}"
    return str(soft)


class SlowBodies:
    """`count` connections from ATTACKER sending a body slowly, each opened again when
    the server closes or refuses it (a while later, each its own while), in a process of
    their own: the pollers' times are the server's, not this process's."""

    def __init__(self, port: int, count: int, byte_every: float) -> None:
        self.waiting = multiprocessing.Value("i", 0)
        """Connections that sent their headers and have no answer yet: held by the server."""
        self.refused = multiprocessing.Value("i", 0)
        """Connections answered 429 or 503 at once."""
        self._stop = multiprocessing.Event()
        self._process = multiprocessing.Process(
            target=_attack, args=(port, count, byte_every, self.waiting, self.refused, self._stop)
        )

    def __enter__(self) -> SlowBodies:
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(60)
        if self._process.is_alive():
            self._process.kill()


def _attack(
    port: int, count: int, byte_every: float, waiting: Any, refused: Any, stop: Any
) -> None:
    asyncio.run(_slow_bodies(port, count, byte_every, waiting, refused, stop))


async def _slow_bodies(
    port: int, count: int, byte_every: float, waiting: Any, refused: Any, stop: Any
) -> None:
    async def hold() -> None:
        """One connection, held as long as the server lets it be."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(ATTACKER, 0))
        waiting.value += 1
        try:
            writer.write(HEADERS)
            await writer.drain()
            while True:
                try:
                    answer = await asyncio.wait_for(reader.read(4096), byte_every)
                except TimeoutError:
                    writer.write(b" ")
                    await writer.drain()
                    continue
                if answer.startswith((b"HTTP/1.1 429", b"HTTP/1.1 503")):
                    refused.value += 1
                return
        finally:
            waiting.value -= 1
            writer.close()

    async def again_and_again() -> None:
        while True:
            with contextlib.suppress(OSError):
                await hold()
            await asyncio.sleep(byte_every * random.uniform(0.5, 1.5))

    tasks = [asyncio.create_task(again_and_again()) for _ in range(count)]
    await asyncio.to_thread(stop.wait)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def poll(url: str, agents: list[str], every: float, seconds: float) -> list[float]:
    """Each agent's first page, asked every `every` seconds by a client of its own for
    `seconds`; every answer's time, in seconds."""
    times: list[float] = []
    query = (
        "query($a: ID) { suspendedRuns(filter: {agentId: $a}, first: 20) "
        "{ total runs { runId toolCalls { toolName } } } }"
    )

    def client(agent: str) -> None:
        params = {"query": query, "variables": json.dumps({"a": agent})}
        path = "/graphql?" + urllib.parse.urlencode(params)
        stop = time.monotonic() + seconds
        with httpx.Client(base_url=url, timeout=60) as http:
            while (now := time.monotonic()) < stop:
                started = time.perf_counter()
                answer = http.get(path)
                times.append(time.perf_counter() - started)
                if answer.status_code != 200 or "errors" in answer.json():
                    raise SystemExit(f"a poll failed: {answer.status_code} {answer.text[:200]}")
                time.sleep(max(0.0, every - (time.monotonic() - now)))

    threads = [threading.Thread(target=client, args=(agent,)) for agent in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def settled(pid: int, baseline: int, within: float = 60) -> None:
    """Waits until process `pid` holds about `baseline` descriptors again."""
    deadline = time.monotonic() + within
    while descriptors(pid) > baseline + 10 and time.monotonic() < deadline:
        time.sleep(0.2)


def most_descriptors(pid: int, during: Callable[[], T]) -> tuple[T, int]:
    """What `during()` returned, and the most descriptors process `pid` held meanwhile."""
    most = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, descriptors(pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        return during(), most
    finally:
        done.set()
        sampler.join()


def figures(times: list[float]) -> tuple[float, float]:
    """Median and p99 of `times`, in milliseconds."""
    values = [t * 1000 for t in times]
    return statistics.median(values), statistics.quantiles(values, n=100)[-1]
