"""Where a derived index lives, and the marker that says it is Nod's and whose it is.

A directory with other files and no marker is never touched (a wrong NOD_SEARCH_INDEX_DIR loses
nothing); a marked one tantivy cannot open is rebuilt. The marker, the meta file and the 2 KiB
store blocks, measured: docs/search.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import tantivy

from adapters.storage.search_index.documents import ANALYZER, analyzer
from core.errors import IndexFailure

log = logging.getLogger("nod.history.index")
FORMAT = 8  # bump when the schema, the analyzer or the settings change: the index is then rebuilt
SETTINGS = {"docstore_compression": "lz4", "docstore_blocksize": 2048}
WRITER_LOCK = ".tantivy-writer.lock"  # tantivy's own names: the lock its IndexWriter holds,
META_LOCK = ".tantivy-meta.lock"  # and the one that keeps its clean-up from deleting files being opened
_CORRUPTION = ("Data corrupted", "FileDoesNotExist")  # tantivy's words for an unreadable meta file, a lost file


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
        if not (self.path / "meta.json").exists():
            self._new_meta(schema)
        index = self._opened_or_made_anew(schema)
        index.register_tokenizer(ANALYZER, analyzer())
        return index

    def _opened_or_made_anew(self, schema: Any) -> Any:
        opened = self._opened_unless_damaged(schema)
        return opened if opened is not None else self._made_anew(schema)

    def _opened_unless_damaged(self, schema: Any) -> Any | None:
        """The index, or None when tantivy says its files are damaged; any other failure (an
        I/O error such as too many open files) is raised: the index is kept, the database answers."""
        try:
            return tantivy.Index(schema, path=str(self.path), reuse=True)
        except ValueError as exc:
            if any(words in str(exc) for words in _CORRUPTION):
                return None
            raise

    def _made_anew(self, schema: Any) -> Any:
        """A Nod index tantivy cannot read (a meta file cut short, a file it lists but lacks)
        holds nothing the database cannot give again: emptied and made anew, it is rebuilt by
        catching up, and the database answers meanwhile. Done under tantivy's writer lock
        (tantivy takes it with ``flock`` on the same file), held until the new index is open:
        a process writing here keeps its files, and of two processes that both failed to open
        it, the second finds the first's new index. The meta file goes first and the marker
        stays (replaced whole at the end), so a kill part way leaves a marked directory that
        opens as an empty index; the lock files stay (unlinking a held lock splits it in two)."""
        with open(self.path / WRITER_LOCK, "a") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise IndexFailure("The search index cannot be opened and another process writes it; "
                                   "the database's own index answers.") from None
            opened = self._opened_unless_damaged(schema)  # made anew by another process meanwhile?
            if opened is not None:
                return opened
            log.warning("search_index_rebuild reason=unreadable dir=%s", self.path)
            (self.path / "meta.json").unlink(missing_ok=True)
            kept = {self._marker.name, self._staged.name, WRITER_LOCK, META_LOCK}
            for entry in self.path.iterdir():
                if entry.is_dir():
                    shutil.rmtree(entry)
                elif entry.name not in kept:
                    entry.unlink()
            self.mark(None)
            self._new_meta(schema)
            return tantivy.Index(schema, path=str(self.path), reuse=True)

    def _new_meta(self, schema: Any) -> None:
        """An empty index's meta file with SETTINGS, created only if none exists (see above).

        Best effort: where it cannot be made (no hard links on the file system, no scratch
        space), tantivy makes its own with the defaults. Written and synced before it is
        linked, as tantivy syncs its own: a meta file left empty by a power cut would keep
        the index from opening."""
        try:
            meta = _meta_with_settings(schema)
            if meta is not None:
                self._link_meta(meta)
        except (OSError, ValueError) as exc:  # ValueError: tantivy's own errors, an unreadable meta file
            log.warning("search_index_default_settings error=%s", type(exc).__name__)

    def _link_meta(self, meta: dict[str, Any]) -> None:
        for stray in self.path.glob("meta.*.nod"):  # left by a process that died before its unlink
            with contextlib.suppress(FileNotFoundError):
                stray.unlink()
        handle, staged = tempfile.mkstemp(prefix="meta.", suffix=".nod", dir=self.path)
        try:
            with os.fdopen(handle, "w") as out:
                out.write(json.dumps(meta))
                out.flush()
                os.fsync(out.fileno())
            os.link(staged, self.path / "meta.json")  # fails, replacing nothing, where one exists
            _sync_directory(self.path)
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged)

    def mark(self, database: str | None) -> None:
        """Bind the index to ``database`` (``nod_meta``'s instance), written whole or not at all."""
        self._staged.write_text(json.dumps({"format": FORMAT, "database": database}))
        self._staged.replace(self._marker)

    def edits(self) -> int:
        """The newest edit (a ``message_versions`` id) the index holds the words of; 0 for none."""
        found = self._marked().get("edits")
        return found if type(found) is int else 0

    def mark_edits(self, edits: int) -> None:
        """Record, after tantivy's commit, that the index holds every edit up to ``edits``."""
        marked = {**self._marked(), "edits": edits}
        self._staged.write_text(json.dumps(marked))
        self._staged.replace(self._marker)

    def bound_to(self) -> str | None:
        """The identity of the database this index was built from."""
        database = self._marked().get("database")
        return database if isinstance(database, str) else None


def _meta_with_settings(schema: Any) -> dict[str, Any] | None:
    """tantivy's own meta file for an empty index of ``schema``, with SETTINGS; None when this
    tantivy keeps its settings elsewhere."""
    with tempfile.TemporaryDirectory() as scratch:
        tantivy.Index(schema, path=scratch, reuse=False)
        meta = json.loads((Path(scratch) / "meta.json").read_text())
    settings = meta.get("index_settings") if isinstance(meta, dict) else None
    if not isinstance(settings, dict) or not SETTINGS.keys() <= settings.keys():
        return None
    return {**meta, "index_settings": {**settings, **SETTINGS}}


def _sync_directory(path: Path) -> None:
    """The directory's entries on disk: a new name survives a power cut."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)

