"""``python -m ask_permissions``: the ``ask-permissions`` command."""

from .cli._main import main

raise SystemExit(main())
