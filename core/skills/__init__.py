"""Learned skills: procedures Nod writes for itself after a task, and the built-in task guides."""
