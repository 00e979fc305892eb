"""The agent turn: one at a time per owner, its prompt, the tool loop, voice notes, the model gateway, usage and spending."""
