"""patchstack: a fork's local modifications as an ordered, named, tagged patch series."""

__version__ = "0.1.0"
