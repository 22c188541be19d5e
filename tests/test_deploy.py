"""The production recipe of docs/how-to/deploy.md, as written: the built wheel in a fresh
venv, its environment file, the systemd unit (accepted by `systemd-analyze verify`, its
command run as systemd runs it), and nginx with TLS in front, through which a query is
answered and a subscription served; `check` reads the same file, and the unit's stop
signal ends the server with status 0."""

from __future__ import annotations

import asyncio
import configparser
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dotenv import dotenv_values
from websockets.asyncio.client import connect

from suspended_runs.server.embedded_mongodb import free_port

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).parent.parent / "docs" / "how-to" / "deploy"
NAME = "inbox.example.com"


def needs(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        pytest.fail(f"{program} is not installed: scripts/test installs it")
    return found


class Host:
    """One host laid out as the recipe lays it out, under a temporary folder: the recipe's
    paths (/etc/suspended-runs, /opt/suspended-runs/venv, /var/lib/suspended-runs, the
    certificate, the ports) swapped for this test's."""

    def __init__(self, root: Path, venv: Path, mongo_uri: str) -> None:
        self.root = root
        self.port, self.https, self.http = free_port(), free_port(), free_port()
        self.swaps = {
            "/etc/suspended-runs/": f"{root}/etc/",
            "/opt/suspended-runs/venv": str(venv),
            "/var/lib/suspended-runs": f"{root}/state",
            "/etc/ssl/inbox.example.com/": f"{root}/tls/",
            "127.0.0.1:8000": f"127.0.0.1:{self.port}",
            "PORT=8000": f"PORT={self.port}",
            "listen 443": f"listen {self.https}",
            "listen 80": f"listen {self.http}",
        }
        for folder in ("etc", "state", "tls", "nginx"):
            (root / folder).mkdir()
        env = self.placed("env", "etc/env").read_text()
        uri = next(line for line in env.splitlines() if line.startswith("MONGODB_URI="))
        (root / "etc" / "env").write_text(env.replace(uri, f"MONGODB_URI={mongo_uri}"))

    def placed(self, name: str, where: str) -> Path:
        text = (RECIPE / name).read_text()
        for shown, used in self.swaps.items():
            text = text.replace(shown, used)
        path = self.root / where
        path.write_text(text)
        return path

    @property
    def env_file(self) -> Path:
        return self.root / "etc" / "env"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def host(tmp_path: Path, fresh_venv: Path, mongo_uri: str) -> Host:
    return Host(tmp_path, fresh_venv, mongo_uri)


def make_key(host: Host) -> str:
    made = host.run(
        f"{host.swaps['/opt/suspended-runs/venv']}/bin/suspended-runs",
        "new-api-key", "--name", "alice", "--role", "approver", "--all",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    key = made.stdout.splitlines()[0].split()[-1]
    entry = json.loads(made.stdout[made.stdout.index("{") :])
    (host.root / "etc" / "api-keys.json").write_text(json.dumps([entry]))
    return key


@pytest.fixture
def unit(host: Host) -> configparser.ConfigParser:
    path = host.placed("suspended-runs.service", "suspended-runs.service")
    verified = host.run(needs("systemd-analyze"), "verify", str(path))
    mine = [line for line in verified.stderr.splitlines() if "suspended-runs.service" in line]
    assert verified.returncode == 0 and not mine, verified.stderr
    parsed = configparser.ConfigParser(strict=False, interpolation=None)
    parsed.optionxform = str  # type: ignore[assignment,method-assign]
    parsed.read(path)
    return parsed


@pytest.fixture
def nginx(host: Host) -> Iterator[None]:
    tls = host.root / "tls"
    made = host.run(
        needs("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}",
        "-keyout", str(tls / "privkey.pem"), "-out", str(tls / "fullchain.pem"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    site = host.placed("nginx.conf", "nginx/site.conf")
    main = host.root / "nginx" / "nginx.conf"
    main.write_text(
        f"pid {host.root}/nginx/nginx.pid;\nerror_log stderr;\nevents {{}}\n"
        f"http {{\naccess_log off;\ninclude {site};\n}}\n"
    )
    command = [needs("nginx"), "-p", str(host.root / "nginx"), "-c", str(main)]
    tested = host.run(*command, "-t")
    assert tested.returncode == 0, tested.stderr
    with (host.root / "nginx" / "nginx.log").open("ab") as log:
        process = subprocess.Popen([*command, "-g", "daemon off;"], stderr=log)
    yield
    process.send_signal(signal.SIGQUIT)
    process.wait(30)


def through_nginx(host: Host, key: str, body: dict[str, str], within: float = 0) -> str:
    """What curl gets over HTTPS from nginx, for `inbox.example.com`, the test's CA trusted."""
    deadline = time.monotonic() + within
    while True:
        got = host.run(
            "curl", "-s", "--resolve", f"{NAME}:{host.https}:127.0.0.1",
            "--cacert", str(host.root / "tls" / "fullchain.pem"),
            f"https://{NAME}:{host.https}/graphql", "-H", "content-type: application/json",
            "-H", f"x-api-key: {key}", "-d", json.dumps(body),
        )  # fmt: skip
        if (got.returncode == 0 and got.stdout.startswith("{")) or time.monotonic() > deadline:
            return got.stdout
        time.sleep(0.5)


async def subscribed(host: Host, key: str) -> dict[str, object]:
    context = ssl.create_default_context(cafile=str(host.root / "tls" / "fullchain.pem"))
    async with connect(
        f"wss://{NAME}:{host.https}/graphql",
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        ssl=context,
        host="127.0.0.1",
        port=host.https,
    ) as ws:
        auth = {"apiKey": key}
        await ws.send(json.dumps({"type": "connection_init", "payload": auth}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        query = "subscription { suspendedRuns { total } }"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        answer: dict[str, object] = json.loads(await asyncio.wait_for(ws.recv(), 30))
        return answer


def test_the_recipe_serves_behind_nginx_with_tls_and_stops_on_the_units_signal(
    host: Host,
    unit: configparser.ConfigParser,
    nginx: None,
    fresh_venv: Path,
) -> None:
    key = make_key(host)
    command = f"{fresh_venv}/bin/suspended-runs"
    checked = host.run(command, "--env-file", str(host.env_file), "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok    settings: read and usable (production)" in checked.stdout
    assert "ok    auth: API keys or JWT configured" in checked.stdout
    # The server starts only now: `serving` is asked for after the keys exist.
    process = _start(host, unit)
    try:
        viewer = {"query": "{ viewer { subject role } }"}
        answer = json.loads(through_nginx(host, key, viewer, within=120))
        assert answer == {"data": {"viewer": {"subject": "key:alice", "role": "APPROVER"}}}
        anonymous = through_nginx(host, "not-a-key", viewer)
        assert "UNAUTHENTICATED" in anonymous
        first = asyncio.run(subscribed(host, key))
        assert first["type"] == "next", first
        process.send_signal(getattr(signal, unit["Service"]["KillSignal"]))
        stop = float(unit["Service"]["TimeoutStopSec"])
        assert process.wait(stop) == 0, (host.root / "serve.log").read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _start(host: Host, unit: configparser.ConfigParser) -> subprocess.Popen[bytes]:
    service = unit["Service"]
    settings = dotenv_values(service["EnvironmentFile"])
    env = {"PATH": os.environ["PATH"], **{k: v for k, v in settings.items() if v is not None}}
    with (host.root / "serve.log").open("ab") as log:
        return subprocess.Popen(
            service["ExecStart"].split(),
            cwd=service["WorkingDirectory"],
            env=env,
            stdout=log,
            stderr=log,
        )
