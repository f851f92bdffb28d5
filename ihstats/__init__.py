"""ihstats: statistics over ihtrain logs (emergence, UPT laws, frontiers, permutation tests).

Never imports torch: logs can be analysed anywhere.
"""

__version__ = "0.1.0"
