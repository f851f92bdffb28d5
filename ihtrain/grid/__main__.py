"""``python -m ihtrain.grid``: the grid's command line (:mod:`ihtrain.grid.cli`)."""
import sys

from ihtrain.grid.cli import main

sys.exit(main())
