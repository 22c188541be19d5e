"""A webhook receiver in a process of its own, for `scripts/bench --webhooks`.

`python -m scripts.receiver LOG` listens on loopback, prints its port, and appends one line
per request to LOG: when it came (seconds since the epoch), the path, the status it got,
its `webhook-id` and its run's id. By the path:

- `/never...`: the request is read and never answered (logged with status 0);
- `/fail...`: 500 for `--fail-for` seconds from the first such request, then 204;
- any other: 204 at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # a burst's connections wait to be accepted, not refused


def serve(log: Path, fail_for: float) -> None:
    lock, out = threading.Lock(), log.open("a", buffering=1)
    failing_since: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            now, run_id = time.time(), json.loads(body)["data"]["run"]["runId"]
            if self.path.startswith("/never"):
                with lock:
                    out.write(f"{now:.6f} {self.path} 0 {self.headers['webhook-id']} {run_id}\n")
                threading.Event().wait()  # holds the connection, never answers
            status = 204
            if self.path.startswith("/fail"):
                with lock:
                    failing_since[:] = failing_since or [now]
                status = 500 if now - failing_since[0] < fail_for else 204
            with lock:
                out.write(f"{now:.6f} {self.path} {status} {self.headers['webhook-id']} {run_id}\n")
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.receiver", description=__doc__)
    parser.add_argument("log", type=Path)
    parser.add_argument("--fail-for", type=float, default=10.0)
    args = parser.parse_args()
    serve(args.log, args.fail_for)
    return 0


if __name__ == "__main__":
    sys.exit(main())
