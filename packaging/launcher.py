"""The bundle's entry point: the ``sfumato`` console script, frozen."""

import sys

from app.cli import main

sys.exit(main())
