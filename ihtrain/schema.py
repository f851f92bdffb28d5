"""``python -m ihtrain.schema``: the run/grid directory check, kept under its old name (the
shipped data cards cite it). The checks live in :mod:`ihstats.schema`."""

import sys

from ihstats.schema import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m ihtrain.schema"))
