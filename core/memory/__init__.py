"""The memory document: one JSON value per owner, changed only by pure functions.

Beside the frozen values and their operations, the package holds the JSON form stored at
``memory/MEMORY.md``, the texts people and the agent read, memory_read and memory_find, and
export and import. Persistence lives in ``adapters.storage``.
"""
