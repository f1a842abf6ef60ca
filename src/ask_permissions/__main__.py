"""``python -m ask_permissions``: the ``ask-permissions`` command."""

from ._cli import main

raise SystemExit(main())
