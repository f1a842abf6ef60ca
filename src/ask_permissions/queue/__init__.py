"""The approval queue and session grants: the state a person's decisions live in, and where it is kept.

``_action`` (the ``Action`` value), ``_args`` (the read-only copy of its arguments), ``_snapshot`` (the
snapshot format), ``_drain`` (the drain protocol), ``_waiters`` (who waits on what), ``_queue``
(``ApprovalQueue``), ``_grants`` (``SessionPermissionGrants``), ``_store`` (the store interface and
``MemoryStore``), and the durable stores ``_sqlite`` and ``_postgres`` over ``_sql``. May import only the
package's ground floor (``_vocabulary``, ``_errors``, ``_strict``, ``_clock``, ``_names``, ``_tool_call``).
"""
