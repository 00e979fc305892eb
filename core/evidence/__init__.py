"""Evidence for a turn: selection before it, the packet, and the reply check after it."""
