"""Files people write: policy files (``load_policy``).

May import ``rules``, ``policy`` and ``queue``; never ``cli`` or ``integrations``.
"""
