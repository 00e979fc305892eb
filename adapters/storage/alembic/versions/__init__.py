"""Nod's schema revisions, oldest first by number; each says why it exists (docs/migrations.md)."""
