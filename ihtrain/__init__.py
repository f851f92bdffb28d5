"""ihtrain: a minimal GPT trainer with dense per-head induction-head metrics.

Importing the package is cheap (no torch); submodules import torch where they need it.
"""

__version__ = "0.1.0"
