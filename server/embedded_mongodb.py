"""The embedded MongoDB: a SecantusDB server process, for a laptop, a demo and the tests.

It runs as a separate process (its own WiredTiger files under a data folder), so the
data survives a restart. A small state file beside the data names the running
process, its port and the process that started it, so `suspended-runs reconcile` can
reach the server `serve` started instead of starting a second one on the same files, and
so a start can stop a server that a killed process left running on its data (the server
runs in its own session, so it outlives a `kill -9` of its parent).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from suspended_runs.server.errors import EmbeddedMongoDBError

log = logging.getLogger(__name__)

_STATE_FILE = "embedded-mongodb.json"
_OPENING_NOTE_EVERY = 30.0
"""Seconds between log lines while the server opens its data folder. It has no time limit:
SecantusDB reads every document as it opens (minutes for a large collection whose data is
not in the page cache), and a server stopped for taking long never starts."""
_STOP_TIMEOUT = 300.0
"""Longest a clean stop is waited for before the server is killed. Its clean shutdown
writes what it holds to the data folder (a checkpoint), which grows with the data and took
longer than a shorter limit in `scripts/bench`; a server killed instead recovers from its
journal as it next opens."""
_STOPPING_NOTE_EVERY = 30.0
"""Seconds between log lines while the server stops."""
_LOCKED = "already being managed by another process"
_PANIC = b"WT_PANIC"
"""What WiredTiger logs when its storage failed (a full disk, among others): the server
process stays up, but answers every command with an internal error until restarted."""
"""What WiredTiger says when another process holds the data folder's lock."""
_OPLOG_ENTRIES = 1_000_000
"""The oplog's cap (SecantusDB's default: 100,000). Entries still leave it after an hour
(its retention); the cap only bounds a burst. At the default, a first start at 100,000
runs wrote more than the cap holds, so each entry it wrote pruned one of the last hour's
(read whole to be pruned: a 15 kB snapshot each), a third of that first start, and a
resume token kept before such a burst was gone after it."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _server_command() -> list[str]:
    beside_python = Path(sys.executable).parent / "secantusd-py"
    found = str(beside_python) if beside_python.exists() else shutil.which("secantusd-py")
    if found is None:
        raise EmbeddedMongoDBError("secantusd-py not found: install the `secantusdb` package")
    return [found]


def _answers(uri: str, timeout_ms: int = 500) -> bool:
    client: MongoClient[dict[str, object]] = MongoClient(
        uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms
    )
    try:
        client.admin.command("ping")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


def _uri(host: str, port: int) -> str:
    return f"mongodb://{host}:{port}/?directConnection=true"


def _process(pid: int) -> tuple[list[str], int] | None:
    """A live process's arguments and parent pid; None when it is gone, a zombie, or
    cannot be read (no /proc)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if stat[0] == "Z":
        return None
    return [arg.decode(errors="replace") for arg in argv if arg], int(stat[1])


def _exits_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _process(pid) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _stop_left_behind(pid: int, data_dir: Path) -> None:
    """Stop a server that is not our child: SIGINT (its clean shutdown), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
        if not _stopped(functools.partial(_gone_within, pid), data_dir):
            os.killpg(pid, signal.SIGKILL)  # its own group: started with start_new_session
            _gone_within(pid, _STOPPING_NOTE_EVERY)


def _stopped(gone_within: Callable[[float], bool], data_dir: Path) -> bool:
    """Whether a server asked to stop is gone within `_STOP_TIMEOUT`, saying every
    `_STOPPING_NOTE_EVERY` that it is still stopping."""
    started = time.monotonic()
    while not gone_within(min(_STOPPING_NOTE_EVERY, _STOP_TIMEOUT)):
        waited = time.monotonic() - started
        if waited >= _STOP_TIMEOUT:
            log.warning("embedded MongoDB did not stop in time; killing it")
            return False
        log.warning(
            "the embedded MongoDB is still stopping (it writes what it holds to disk)",
            extra={"seconds": round(waited), "dataDir": str(data_dir)},
        )
    return True


def default_cache_size() -> str:
    """MongoDB's own rule for WiredTiger's cache, half of (RAM - 1 GB) and at least 256 MB:
    the embedded server's fixed 1 GB holds a tenth of 100,000 Mastra snapshots, and a
    follower behind a cache that small applies a quarter fewer changes."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "1G"
    megabytes = max(256, (memory - 2**30) // 2 // 2**20)
    return f"{megabytes}M"


class EmbeddedMongoDB:
    def __init__(
        self,
        data_dir: Path,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        cache_size: str | None = None,
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.host = host
        self.port = port
        self.cache_size = cache_size or default_cache_size()
        """Its WiredTiger cache ("1G", "512M")."""
        self.process: subprocess.Popen[bytes] | None = None
        self._log_read = 0
        """How far `panicked` has read the log: from this start of the server on."""

    @property
    def log_path(self) -> Path:
        return self.data_dir / "embedded-mongodb.log"

    @property
    def uri(self) -> str:
        return _uri(self.host, self.port)

    @property
    def state_file(self) -> Path:
        return self.data_dir / _STATE_FILE

    @classmethod
    def running_in(cls, data_dir: Path) -> str | None:
        """The URI of an embedded server already serving `data_dir`, if one answers."""
        try:
            state = json.loads((data_dir / _STATE_FILE).read_text())
            uri = _uri(str(state["host"]), int(state["port"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return uri if _answers(uri) else None

    def start(self) -> str:
        """Start the server; first stop one that a killed process left running on this data.

        Raises EmbeddedMongoDBError (one line first) when it cannot: among others when a
        live process uses the data, ours (its state file says so) or not (the lock is held).
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._clear_left_behind()
        try:
            self._launch()
        except BaseException:  # a failed start, or a signal while starting: no orphan
            self.stop()
            raise
        return self.uri

    def _clear_left_behind(self) -> None:
        """Stop the server the state file names when the process that started it is gone
        (killed); forget a state file whose server is gone."""
        if not self.state_file.exists():
            return
        state = self._state()
        pid = state.get("pid")
        found = _process(pid) if isinstance(pid, int) else None
        if isinstance(pid, int) and found is not None and self._serves_this_data(found[0]):
            if found[1] == state.get("owner"):  # still the child of a live process
                raise EmbeddedMongoDBError(
                    f"its data is in use by process {found[1]}, which runs an embedded "
                    f"MongoDB on it (pid {pid}, port {state.get('port')})"
                )
            log.warning("stopping an embedded MongoDB left running", extra={"pid": pid})
            _stop_left_behind(pid, self.data_dir)
        self.state_file.unlink(missing_ok=True)

    def _state(self) -> dict[str, object]:
        try:
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def _serves_this_data(self, argv: list[str]) -> bool:
        storage = ["--storage-path", str(self.data_dir / "db")]
        server = any(Path(arg).name == "secantusd-py" for arg in argv)
        return server and any(argv[i : i + 2] == storage for i in range(len(argv)))

    def _launch(self) -> None:
        if self.port == 0:
            self.port = free_port(self.host)
        log_path = self.log_path
        command = [*_server_command(), "--host", self.host, "--port", str(self.port)]
        command += ["--storage-path", str(self.data_dir / "db"), "--log-level", "WARNING"]
        command += ["--oplog-max-entries", str(_OPLOG_ENTRIES)]
        command += ["--cache-size", self.cache_size]
        with log_path.open("ab") as log_file:
            logged = log_file.tell()
            self.process = subprocess.Popen(
                command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C reaches us, and we stop it in order
            )
        self._log_read = logged
        self._wait_until_it_answers(log_path, logged)
        state = {"host": self.host, "port": self.port, "pid": self.process.pid}
        self.state_file.write_text(json.dumps({**state, "owner": os.getpid()}))
        log.info(
            "embedded MongoDB started",
            extra={"uri": self.uri, "dataDir": str(self.data_dir), "pid": self.process.pid},
        )

    def _wait_until_it_answers(self, log_path: Path, logged: int) -> None:
        """For as long as the server runs and opens its data, saying so now and then."""
        assert self.process is not None
        started = noted = time.monotonic()
        while not _answers(self.uri):
            if self.process.poll() is not None:
                self._exited(log_path, logged)
            if time.monotonic() - noted >= _OPENING_NOTE_EVERY:
                noted = time.monotonic()
                log.warning(
                    "the embedded MongoDB is still opening its data (it reads every document)",
                    extra={"seconds": round(noted - started), "dataDir": str(self.data_dir)},
                )
            time.sleep(0.1)

    def _exited(self, log_path: Path, logged: int) -> NoReturn:
        """Raise what stopped the server as it started, from its log."""
        assert self.process is not None
        with log_path.open("rb") as log_file:
            log_file.seek(logged)
            tail = log_file.read().decode(errors="replace")[-2000:]
        if _LOCKED in tail:
            raise EmbeddedMongoDBError(
                "its data is in use by another process (WiredTiger.lock is held): "
                "stop that process, or use another data folder"
            )
        raise EmbeddedMongoDBError(
            f"the embedded MongoDB exited with {self.process.returncode} "
            f"(its log: {log_path}):\n{tail}"
        )

    def panicked(self) -> bool:
        """Whether the server's storage failed since it started (see `_PANIC`)."""
        try:
            with self.log_path.open("rb") as log_file:
                start = max(0, self._log_read - len(_PANIC))  # a line cut in two is seen
                log_file.seek(start)
                written = log_file.read()
        except OSError:
            return False
        self._log_read = start + len(written)
        return _PANIC in written

    def kill(self) -> None:
        """Stop the server at once (SIGKILL): one whose storage failed cannot write a
        checkpoint, and recovers from its journal as it next opens."""
        process, self.process = self.process, None
        if process is None:
            return
        self.state_file.unlink(missing_ok=True)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        self.state_file.unlink(missing_ok=True)
        if process.poll() is None:
            # SIGINT: the server's own clean shutdown, which checkpoints WiredTiger.
            process.send_signal(signal.SIGINT)
            if not _stopped(functools.partial(_exits_within, process), self.data_dir):
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.info("embedded MongoDB stopped", extra={"code": process.returncode})

    def __enter__(self) -> EmbeddedMongoDB:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
