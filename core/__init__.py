"""Nod's core: memory, conversation history, storage and (later) the agent turn.

The core knows no channel, SDK or process: it is handed its ports (a clock, a database
engine, a chat model, a reply sink) by the composition root in ``bot``.
"""
