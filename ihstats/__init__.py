"""ihstats: statistics over ihtrain logs (emergence, UPT laws, frontiers, permutation tests).

Never imports torch, nor ihtrain: logs can be analysed anywhere. It is the ground floor: the run
directory contract, the checked readers and atomic writers (``fileio``) and the id rules (``ids``)
live here, and ihtrain imports them.
"""

__version__ = "0.1.0"
