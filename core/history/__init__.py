"""Searching and reading the conversation itself."""
