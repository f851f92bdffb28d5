"""ihstats: statistics over ihtrain logs (emergence, UPT laws, frontiers, permutation tests).

Never imports torch, nor ihtrain: logs can be analysed anywhere. Three rooms (issue 67), lowest
first: ``ihstats.base`` (the run directory contract, the checked readers and atomic writers
``fileio``, the id rules ``ids``: what ihtrain imports), ``ihstats.figures``, and the statistics
(the rest of this package: emergence, the certificate, the detectors and the fit groups).
"""

__version__ = "0.1.0"
