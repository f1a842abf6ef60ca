"""Settings sources: the files (and runtime sources) a layered policy's rules and settings come from.

``_sources`` (``SettingsSource``, one source as read), ``_settings`` (``PermissionSettings``, the seven
merged, and the answers that persist), ``_atomic`` (writing a settings file in place), and the strict
readers of the files people write, which policy files share: ``_policy_text`` (JSON or TOML, bounded) and
``_field_lines`` (the line a field sits on, for errors). Below the policies, which read it; it may import
``rules`` and the ground floor only.
"""
