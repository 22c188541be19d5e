"""The embedded MongoDB: a SecantusDB server process, for a laptop, a demo and the tests.

It runs as a separate process (its own WiredTiger files under a data folder), so the
data survives a restart. A small state file beside the data names the running
process and its port, so `suspended-runs reconcile` can reach the server `serve` started
instead of starting a second one on the same files.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from suspended_runs.storage import EmbeddedMongoDBError

log = logging.getLogger(__name__)

_STATE_FILE = "embedded-mongodb.json"
_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 15.0


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


class EmbeddedMongoDB:
    def __init__(self, data_dir: Path, *, port: int = 0, host: str = "127.0.0.1") -> None:
        self.data_dir = data_dir.resolve()
        self.host = host
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

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
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = free_port(self.host)
        log_path = self.data_dir / "embedded-mongodb.log"
        command = [*_server_command(), "--host", self.host, "--port", str(self.port)]
        command += ["--storage-path", str(self.data_dir / "db"), "--log-level", "WARNING"]
        with log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C reaches us, and we stop it in order
            )
        deadline = time.monotonic() + _START_TIMEOUT
        while not _answers(self.uri):
            if self.process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise EmbeddedMongoDBError(
                    f"the embedded MongoDB exited with {self.process.returncode}:\n{tail}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise EmbeddedMongoDBError(f"the embedded MongoDB did not answer on {self.uri}")
            time.sleep(0.1)
        self.state_file.write_text(
            json.dumps({"host": self.host, "port": self.port, "pid": self.process.pid})
        )
        log.info(
            "embedded MongoDB started",
            extra={"uri": self.uri, "dataDir": str(self.data_dir), "pid": self.process.pid},
        )
        return self.uri

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        self.state_file.unlink(missing_ok=True)
        if process.poll() is None:
            # SIGINT: the server's own clean shutdown, which checkpoints WiredTiger.
            process.send_signal(signal.SIGINT)
            try:
                process.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                log.warning("embedded MongoDB did not stop in time; killing it")
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
