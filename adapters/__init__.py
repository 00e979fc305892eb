"""Adapters to the outside world; each imports ``core`` and its own SDK, never another adapter."""
