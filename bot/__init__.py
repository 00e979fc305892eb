"""The composition root: settings, wiring, the ``nod`` command and the process lifecycle."""
