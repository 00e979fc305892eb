"""Where a derived index lives, and the marker that says it is Nod's and whose it is.

The marker (``nod-format.json``) names the index format and the database it was built
from; it is written before tantivy's files and replaced whole, so a directory holding
tantivy's files is always marked and a crash mid-write never leaves a marker that reads as
none. A directory that holds other files and no marker is never touched:
NOD_SEARCH_INDEX_DIR pointed at the wrong place must lose nothing.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import tantivy

from core.errors import IndexFailure
from core.history.documents import ANALYZER, analyzer

log = logging.getLogger("nod.history.index")
FORMAT = 6  # bump when the schema or the analyzer changes: the index is then rebuilt


class IndexDirectory:
    def __init__(self, directory: Path) -> None:
        self.path = directory
        self._marker = directory / "nod-format.json"
        self._staged = directory / "nod-format.json.new"
        self._refusal: str | None = None  # set when the directory is not Nod's: it is never touched

    def _marked(self) -> dict[str, Any]:
        try:
            found = json.loads(self._marker.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def open(self, schema: Any) -> Any:
        """Open (or make) the index; an older format's is removed first, a directory that is
        not Nod's never is."""
        if self._refusal is not None:
            raise IndexFailure(self._refusal)
        if self.path.exists() and self._marked().get("format") != FORMAT:
            if not self._marker.exists() and any(p.name != self._staged.name for p in self.path.iterdir()):
                log.error("search_index_refused reason=not_a_nod_index dir=%s", self.path)
                self._refusal = (f"{self.path} holds files that are not Nod's search index; "
                                 "point NOD_SEARCH_INDEX_DIR at an empty or new directory.")
                raise IndexFailure(self._refusal)
            log.info("search_index_rebuild reason=format dir=%s", self.path)
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        if not self._marker.exists():  # the marker first: a directory with tantivy's files is always marked
            self.mark(None)
        index = tantivy.Index(schema, path=str(self.path), reuse=True)
        index.register_tokenizer(ANALYZER, analyzer())
        return index

    def mark(self, database: str | None) -> None:
        """Bind the index to ``database`` (``nod_meta``'s instance), written whole or not at all."""
        self._staged.write_text(json.dumps({"format": FORMAT, "database": database}))
        self._staged.replace(self._marker)

    def bound_to(self) -> str | None:
        """The identity of the database this index was built from."""
        database = self._marked().get("database")
        return database if isinstance(database, str) else None
