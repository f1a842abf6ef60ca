"""The approval queue and session grants: the state a person's decisions live in.

Owns ``ApprovalQueue``, its ``Action`` values and snapshots, and ``SessionPermissionGrants``. May import
only the package's leaf modules (``typing``, ``_errors``, ``_strict``, ``_clock``, ``_tool_call``).
"""
