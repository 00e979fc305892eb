"""Alembic's environment (``env.py``) and Nod's revisions (``versions/``), run by ``adapters.storage.migrations``."""
