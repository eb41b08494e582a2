"""kubectl-aicr: the kubectl plugin for NVIDIA AI Cluster Runtime (AICR) rollouts.

Standard library only; Python 3.8 or newer. The version lives here and nowhere else.
"""

__version__ = "0.1.0"
