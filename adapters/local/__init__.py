"""The local channel: the same turn as Telegram's, in a terminal or behind a pipe."""
