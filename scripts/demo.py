"""`scripts/demo`: the inbox with runs of all three runtimes to decide, offline.

A fresh embedded MongoDB (removed on exit), and on it:
- this server's demo Python agents (`refund-desk`, `support-desk`: runtime/demo_desk.py),
- a real Mastra server (`tests/mastra_peer/demo.mjs`: `mastra-refunds`, `mastra-support`),
  installed from the npm registry on first use; without Node.js and npm the demo runs
  without it and says so,
- a LangGraph agent (`langgraph-refunds`: runtime/demo_graphs.py), checkpointed by a real
  `MongoDBSaver`,
each with runs waiting for a decision; then `suspended-runs serve` on them (HOST, PORT as
`scripts/serve` honours them), until Ctrl-C. Every demo tool only says what it would do.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from suspended_runs.server import EmbeddedMongoDB
from suspended_runs.server.embedded_mongodb import free_port

ROOT = Path(__file__).parent.parent
PEER_DIR = ROOT / "tests" / "mastra_peer"
DATABASE, LANGGRAPH_DATABASE = "mastra", "langgraph"
GRAPHS = {"langgraph-refunds": "suspended_runs.runtime.demo_graphs:refunds"}
REQUESTS = {
    "refund-desk": ["Refund order A-1042, 49.90: I was charged twice", "Refund A-1077, 12.00"],
    "support-desk": ["Where is my order A-1188?"],
    "mastra-refunds": ["Refund order A-2071, 19.90: the parcel arrived broken"],
    "mastra-support": ["Can I change the address of order A-2090?"],
    "langgraph-refunds": ["Refund order A-3015, 89.00: wrong size", "Refund A-3021, 5.50"],
}


def say(text: str) -> None:
    print(f"demo: {text}", file=sys.stderr, flush=True)


def mastra_node() -> Path | None:
    """Node.js with the Mastra peer's packages, installed on first use (None: no npm)."""
    if shutil.which("npm") is None and not (PEER_DIR / "node_modules").exists():
        return None
    say("installing a Mastra server from the npm registry (once; about a minute)")
    done = subprocess.run(
        [str(ROOT / "scripts" / "install-mastra-peer")], capture_output=True, text=True
    )
    return Path(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None


def start_mastra(node: Path, uri: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "MONGODB_URI": uri, "MONGODB_DB": DATABASE, "PORT": str(port)}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(node), "demo.mjs"], cwd=PEER_DIR, env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"
    _wait(f"{url}/api/agents", process, log, ready=lambda status: True)
    return process, url


def ask_mastra(url: str) -> None:
    for agent in ("mastra-refunds", "mastra-support"):
        for text in REQUESTS[agent]:
            memory = {"thread": f"demo-{uuid.uuid4().hex[:8]}", "resource": "customer-7"}
            body = {"messages": [{"role": "user", "content": text}], "memory": memory}
            httpx.post(f"{url}/api/agents/{agent}/stream", json=body, timeout=60).raise_for_status()


def ask_langgraph(uri: str) -> None:
    from langgraph.checkpoint.mongodb import MongoDBSaver

    from suspended_runs.runtime.demo_graphs import refunds

    with MongoDBSaver.from_conn_string(uri, db_name=LANGGRAPH_DATABASE) as saver:
        graph = refunds(saver)
        for text in REQUESTS["langgraph-refunds"]:
            config = {"configurable": {"thread_id": f"demo-{uuid.uuid4().hex[:8]}"},
                      "metadata": {"user_id": "customer-9"}}  # fmt: skip
            graph.invoke({"messages": [{"role": "user", "content": text}]}, config)


START = """mutation($agent: ID!, $prompt: String!) { startRun(input:
  {agentId: $agent, prompt: $prompt, resourceId: "customer-3"}) { __typename } }"""


def ask_python(url: str) -> None:
    for agent in ("refund-desk", "support-desk"):
        for text in REQUESTS[agent]:
            variables = {"agent": agent, "prompt": text}
            httpx.post(f"{url}/graphql", json={"query": START, "variables": variables}, timeout=60)


def serve(uri: str, mastra: str | None, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "MONGODB_URI": uri, "MONGODB_DB": DATABASE,
           "AGENTS": "suspended_runs.runtime.demo_desk:agents", "LANGGRAPH_DB": LANGGRAPH_DATABASE,
           "LANGGRAPH_GRAPHS": json.dumps(GRAPHS), "LOG_LEVEL": "WARNING"}  # fmt: skip
    if mastra:
        env["MASTRA_URL"] = mastra
    host, port = env.get("HOST", "127.0.0.1"), env.get("PORT", "8000")
    process = subprocess.Popen(
        [sys.executable, "-m", "suspended_runs.server.cli", "serve"], env=env
    )
    url = f"http://{host.strip('[]') if ':' not in host else host}:{port}"
    _wait(f"{url}/readyz", process, log, ready=lambda status: status == 200)
    return process, url


def _wait(
    url: str, process: subprocess.Popen[bytes], log: Path, ready: Callable[[int], bool]
) -> None:
    for _ in range(1200):
        if process.poll() is not None:
            raise SystemExit(f"demo: it stopped (see above{f' and {log}' if log.exists() else ''})")
        try:
            if ready(httpx.get(url, timeout=2).status_code):
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"demo: {url} did not answer")


def main() -> int:
    argparse.ArgumentParser(prog="scripts/demo", description=__doc__).parse_args()
    with tempfile.TemporaryDirectory(prefix="suspended-runs-demo-") as folder:
        log = Path(folder) / "mastra.log"
        say("starting an embedded MongoDB for the demo (removed when it stops)")
        with EmbeddedMongoDB(Path(folder) / "db") as mongo:
            node = mastra_node()
            peer, mastra = start_mastra(node, mongo.uri, log) if node else (None, None)
            if mastra is None:
                say("Mastra: skipped (no npm to install Node.js and its packages from)")
            try:
                return _run(mongo.uri, mastra, log)
            finally:
                if peer is not None:
                    peer.terminate()
                    peer.wait(15)


def _run(uri: str, mastra: str | None, log: Path) -> int:
    say("LangGraph: two refund requests wait in threads of a real MongoDBSaver")
    ask_langgraph(uri)
    if mastra:
        say("Mastra: a refund and a customer's question wait on a real Mastra server")
        ask_mastra(mastra)
    say("serving (the first start indexes what is there)")
    server, url = serve(uri, mastra, log)
    try:
        ask_python(url)
        runtimes = "Python, Mastra and LangGraph" if mastra else "Python and LangGraph"
        say(f"ready: open {url}/ to decide runs of {runtimes}; Ctrl-C stops it all.")
        say("every demo tool only says what it would have done: nothing is changed")
        say(f"check it: MONGODB_URI='{uri}' LANGGRAPH_DB={LANGGRAPH_DATABASE} "
            ".venv/bin/suspended-runs check")  # fmt: skip
        return server.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the server too; a signal to us alone, not
        server.send_signal(signal.SIGINT)
        return server.wait(60)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    sys.exit(main())
