"""``python -m schedlang``: the same command line as the ``schedlang`` script."""

from .cli import main

raise SystemExit(main())
