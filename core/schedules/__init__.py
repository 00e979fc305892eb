"""Reminders and scheduled tasks: the owner's schedules, their runs, and the tool that makes them."""
