"""Markdown replies, read once and written per channel.

``reading`` parses a reply once into pieces in a channel's ``Style`` (``pieces``), and
``splitting`` cuts them into messages that each fit the channel's limit. The styles live with
the channels' adapters: core knows the shape of a markup, never a channel by name.
"""
