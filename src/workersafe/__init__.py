"""workersafe: find and fix handles that PyTorch DataLoader workers would share."""

# First, before any module of the analysis: which build of it runs (compiled, or pure Python).
from . import compiled  # noqa: F401

__version__ = "0.1.0"
