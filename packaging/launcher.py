"""The bundle's entry point: the ``sfumato`` console script, frozen."""

import sys

from sfumato.app.cli import main

sys.exit(main())
