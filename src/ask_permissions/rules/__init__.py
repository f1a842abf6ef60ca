"""Rules and matching: tool and argument patterns, ``PermissionRules``, ``PermissionRuleSet``.

Owns how a call is matched against declared rules. May import the package's leaf modules (``typing``,
``_errors``, ``_strict``, ``_tool_call``) and the ``shell`` package (on the ground floor, it imports nothing
else of the package; command specifiers read commands through it), and nothing else of the package:
policies build on rules, never the other way round.
"""
