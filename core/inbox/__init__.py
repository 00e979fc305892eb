"""Where every channel's messages come in: who may talk to Nod, commands, the turn."""
