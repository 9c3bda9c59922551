"""Remote-backend figures against a local ``transformers serve`` serving a tiny random Llama.

    python tools/remote_bench.py [--runs 20] [--json]

(``sfumato bench --model URL`` gives the same figures for any server.) The script builds the
model as the tests do (``tests/remote_servers.py``), starts the server on a free loopback port,
measures with ``model.remote.figures`` and checks the server's log for every cancel it saw.
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

from remote_servers import TransformersServer, build_tiny_llama  # noqa: E402

from model.remote.backend import connect  # noqa: E402
from model.remote.figures import remote_figures  # noqa: E402
from model.tokenizer import load_tokenizer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
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
