"""workersafe: find and fix handles that PyTorch DataLoader workers would share."""

__version__ = "0.1.0"
