"""Searching and reading the conversation itself: history_search, its ranking and cursors, and the derived index."""
