"""Build the line table (``model.line_table``) from the training split only.

    python -m model.training.build_line_table resources/models/sfumato-small/lines

Held-out documents are never read into it, so the held-out evaluation stays honest.
"""

from __future__ import annotations

import argparse
import json
import time

from model.training.corpus import iter_documents
from model.line_table import build


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", help="where to write the table")
    p.add_argument("--keep", type=int, default=3, help="lines kept per key")
    args = p.parse_args(argv)
    start = time.monotonic()
    sizes = build((doc.text for doc in iter_documents("train")), args.folder, keep=args.keep)
    print(json.dumps({**sizes, "seconds": round(time.monotonic() - start, 1)}))


if __name__ == "__main__":
    main()
