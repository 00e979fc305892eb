"""Markdown replies, read once and written per channel.

Models answer in Markdown; each channel shows a different markup (Telegram HTML, WhatsApp's
``*bold*``, the terminal's plain text) and has its own size limit. ``reading`` parses the
reply once with markdown-it-py (CommonMark, strikethrough and tables on, raw HTML off) and
writes it as a stream of pieces in a channel's ``Style``; ``splitting`` cuts that stream
into messages that each fit, closing and reopening marks at a cut so that no part leaves
a tag or a code fence open. The channels' styles live with their adapters: core knows the
shape of a markup, never a channel by name.
"""
