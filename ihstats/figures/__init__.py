"""ihstats.figures: the figures (issue 67). Imports only ihstats.base; a statistics group
reaches it only through its report module."""
