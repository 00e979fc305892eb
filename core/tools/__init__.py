"""The agent's tools: one file per tool, one line in ``registry.TOOLS``."""
