"""The memory document: one JSON value per owner, changed only by pure functions.

``model`` holds the frozen values, ``document`` the operations on them, ``codec`` the
JSON form stored at ``memory/MEMORY.md`` and ``render`` the texts people and the agent
read. Persistence lives in ``core.storage``.
"""
