"""Nod's core: memory, saving, the agent turn and its tools, search, schedules, the page's rules and storage.

The core knows no channel, SDK or process: it is handed its ports (a clock, a database
engine, a chat model, a reply sink) by the composition root in ``bot``.
"""
