"""``python -m bot`` is the ``nod`` command."""

from bot.cli import main

raise SystemExit(main())
