"""The agent turn: the model port and gateway, the tool loop, usage, spending and stop."""
