"""Remote-backend figures against a local ``transformers serve`` serving a tiny random Llama.

    python tools/remote_bench.py [--runs 20] [--json]
    python tools/remote_bench.py --bad-servers      # the message each bad server gets

(``sfumato bench --model URL`` gives the same figures for any server.) The script builds the
model as the tests do (``tests/remote_servers.py``), starts the server on a free loopback port,
measures with ``sfumato.model.remote.figures`` and checks the server's log for every cancel it saw.
Run it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from remote_servers import BAD_SERVERS, ReplayServer, TransformersServer, build_tiny_llama, free_port, self_signed_certificate  # noqa: E402

from sfumato.model.api import EngineError, InfillRequest  # noqa: E402
from sfumato.model.remote.backend import connect  # noqa: E402
from sfumato.model.remote.figures import remote_figures  # noqa: E402
from sfumato.model.tokenizer import load_tokenizer  # noqa: E402


def bad_server_messages() -> dict[str, str]:
    """case -> the one line the backend gives (the editor test checks the document stays intact)."""
    messages = {}
    for case, (replies, _) in sorted(BAD_SERVERS.items()):
        server = ReplayServer()
        server.replies.update(replies)
        try:
            list(connect(server.url).stream([InfillRequest(prefix="a = ", max_new_tokens=16)]))
            messages[case] = "(no error)"
        except EngineError as error:
            messages[case] = str(error)
        finally:
            server.stop()
    tls = ReplayServer(certificate=self_signed_certificate(Path(tempfile.mkdtemp())))
    unreachable = {
        "connection refused": f"http://127.0.0.1:{free_port()}/v1",
        "DNS failure": "http://sfumato-test.invalid:8000/v1",
        "TLS certificate": tls.url,
    }
    for case, url in unreachable.items():
        try:
            connect(url)
        except EngineError as error:
            messages[case] = str(error)
    tls.stop()
    return messages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bad-servers", action="store_true", help="print each bad-server case's message")
    args = parser.parse_args()
    if args.bad_servers:
        for case, message in bad_server_messages().items():
            print(f"{case:24} {message}")
        return 0
    folder = Path(tempfile.mkdtemp(prefix="sfumato-remote-bench-"))
    build_tiny_llama(folder / "model", load_tokenizer(REPO / "resources" / "tokenizer"))
    server = TransformersServer(folder / "model", folder / "server.log")
    try:
        server.wait_ready()
        backend = connect(server.url)
        figures = remote_figures(backend, runs=args.runs)
        backend.close()
        deadline = time.monotonic() + 30
        while server.cancels_seen() < figures["cancel_runs"] and time.monotonic() < deadline:
            time.sleep(0.1)
        figures["cancels_seen_by_server"] = server.cancels_seen()
    finally:
        server.stop()
    print(json.dumps(figures, indent=1) if args.json else "\n".join(f"{k:28} {v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
