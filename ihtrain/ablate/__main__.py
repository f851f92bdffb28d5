"""``python -m ihtrain.ablate``: the ablation command line (:mod:`ihtrain.ablate.cli`)."""
import sys

from ihtrain.ablate.cli import main

sys.exit(main())
