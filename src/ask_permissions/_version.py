"""The package version: the one source of truth (see VERSIONING.md)."""

__version__ = "0.1.0"
