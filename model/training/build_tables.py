"""Build the suggestion engine's tables from the training split only.

    python -m sfumato.model.training.build_tables resources/models/sfumato-small [--only lines|phrases]

``lines/``: the line table (``sfumato.model.line_table``) from every training document. ``phrases/``: the
phrase table (``sfumato.model.phrase_table``) from the English documentation sources. Held-out documents
are never read into either, so the held-out evaluation stays honest.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sfumato.model import line_table, phrase_table
from sfumato.model.suggest import PHRASE_FOLDER, TABLE_FOLDER
from sfumato.model.training.corpus import DOC_SOURCES, iter_documents


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", help="the model folder to write the tables into")
    p.add_argument("--only", choices=["lines", "phrases"])
    args = p.parse_args(argv)
    folder = Path(args.folder)
    if args.only in (None, "lines"):
        start = time.monotonic()
        sizes = line_table.build((doc.text for doc in iter_documents("train")), folder / TABLE_FOLDER)
        print("lines", json.dumps({**sizes, "seconds": round(time.monotonic() - start, 1)}), flush=True)
    if args.only in (None, "phrases"):
        start = time.monotonic()
        prose = (doc.text for doc in iter_documents("train", sources=[name for name, *_ in DOC_SOURCES]))
        sizes = phrase_table.build(prose, folder / PHRASE_FOLDER)
        print("phrases", json.dumps({**sizes, "seconds": round(time.monotonic() - start, 1)}), flush=True)


if __name__ == "__main__":
    main()
