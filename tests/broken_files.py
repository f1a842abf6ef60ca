"""Policy and settings files as new users break them, each with the exact error it must raise.

Each case is a file's name, its content (``None`` for a folder where the file should be), and the message
its loading must fail with: ``{file}`` stands for the file's path. A few files are not broken but are
the mistakes of issue 23 that used to pass silently; those are decided, and the call they are asked about
must never proceed (``CALLS``).
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["BROKEN_POLICIES", "BROKEN_SETTINGS", "DECIDED", "Broken", "Decided"]


class Broken(NamedTuple):
    """A broken file: its name, content (``None``: a folder), the error's type name and its message."""

    name: str
    content: str | None
    error: str
    message: str


class Decided(NamedTuple):
    """A file that loads, and a call it must not let proceed, with the layer that decides it."""

    name: str
    content: str
    tool: str
    arguments: dict[str, object]
    outcome: str
    layer: str


_TOOLS: Final = """\
[tools.run_shell]
permission_kind = "shell"

[tools.read_file]
side_effect_scope = "none"
"""

# -- policy files -------------------------------------------------------------------------------------------

BROKEN_POLICIES: Final[dict[str, Broken]] = {
    "top-level-key-typo": Broken(
        "policy.toml",
        'version = 1\nmdoe = "read_only"\n',
        "InvalidSnapshotError",
        "{file}:2: mdoe: expected no such key (known: auto_approve, default, hooks, mode, permissions, "
        "require_approval, rules, session_grants, tools, unknown_tools, version; did you mean 'mode'?); "
        "got 'read_only'",
    ),
    "permissions-table-typo": Broken(
        "policy.toml",
        'version = 1\n\n[permission]\ndeny = ["run_shell(rm -rf *)"]\n',
        "InvalidSnapshotError",
        "{file}:3: permission: expected no such key (known: auto_approve, default, hooks, mode, "
        "permissions, require_approval, rules, session_grants, tools, unknown_tools, version; did you mean "
        "'permissions'?); got {{'deny': ['run_shell(rm -rf *)']}}",
    ),
    "rule-list-typo": Broken(
        "policy.toml",
        'version = 1\n\n[permissions]\nalow = ["read_file"]\n',
        "InvalidSnapshotError",
        "{file}:4: permissions.alow: expected no such key (known: allow, ask, cwd, deny, home; did you mean "
        "'allow'?); got ['read_file']",
    ),
    "require-approval-key-typo": Broken(
        "policy.json",
        '{\n  "version": 1,\n  "require_aproval": ["run_shell"]\n}\n',
        "InvalidSnapshotError",
        "{file}:3: require_aproval: expected no such key (known: auto_approve, default, hooks, mode, "
        "permissions, require_approval, rules, session_grants, tools, unknown_tools, version; did you mean "
        "'require_approval'?); got ['run_shell']",
    ),
    "tool-name-typo-in-a-rule": Broken(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + '\n[permissions]\ndeny = ["run_shel(rm *)"]\n',
        "UnknownToolError",
        "{file}:10: permissions.deny[0] ('run_shel(rm *)'): names the tool 'run_shel', which is not known; "
        "did you mean 'run_shell'? The known tools: 'read_file', 'run_shell'; set unknown_tools = \"keep\" "
        "in the file to keep rules for tools that come later.",
    ),
    "tool-name-case-in-an-allow": Broken(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + '\n[permissions]\nallow = ["Read_File"]\n',
        "UnknownToolError",
        "{file}:10: permissions.allow[0] ('Read_File'): names the tool 'Read_File', which is not known; "
        "did you mean 'read_file'? The known tools: 'read_file', 'run_shell'; set unknown_tools = \"keep\" "
        "in the file to keep rules for tools that come later.",
    ),
    "tool-name-typo-in-require-approval": Broken(
        "policy.toml",
        'version = 1\nrequire_approval = ["run-shell"]\n\n' + _TOOLS,
        "UnknownToolError",
        "{file}:2: require_approval[0] ('run-shell'): names the tool 'run-shell', which is not known; did "
        "you mean 'run_shell'? The known tools: 'read_file', 'run_shell'; set unknown_tools = \"keep\" in "
        "the file to keep rules for tools that come later.",
    ),
    "tool-name-typo-in-auto-approve": Broken(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + "\n[auto_approve]\nread_fil = true\n",
        "UnknownToolError",
        "{file}:10: auto_approve.read_fil ('read_fil'): names the tool 'read_fil', which is not known; did "
        "you mean 'read_file'? The known tools: 'read_file', 'run_shell'; set unknown_tools = \"keep\" in "
        "the file to keep rules for tools that come later.",
    ),
    "snapshot-rule-names-no-tool": Broken(
        "policy.json",
        '{\n  "version": 1,\n  "tools": {"run_shell": {}},\n  "rules": {"version": 1, "rules": [\n'
        '    {"decision": "deny", "tool_pattern": {"type": "string", "value": "shell"}}\n  ]}\n}\n',
        "UnknownToolError",
        "{file}:5: rules.rules[0] ('shell'): names the tool 'shell', which is not known; did you mean "
        "'run_shell'? The known tools: 'run_shell'; set unknown_tools = \"keep\" in the file to keep rules "
        "for tools that come later.",
    ),
    "mode-value-typo": Broken(
        "policy.toml",
        'version = 1\nmode = "readonly"\n',
        "InvalidSnapshotError",
        "{file}:2: mode: expected one of 'full_access', 'ask_before_changes', 'read_only'; got 'readonly'",
    ),
    "default-value-typo": Broken(
        "policy.toml",
        'version = 1\ndefault = "allow"\n',
        "InvalidSnapshotError",
        "{file}:2: default: expected 'ask' (a person decides what no rule does) or 'proceed'; got 'allow'",
    ),
    "unknown-tools-value-typo": Broken(
        "policy.toml",
        'version = 1\nunknown_tools = "ignore"\n',
        "InvalidSnapshotError",
        "{file}:2: unknown_tools: expected 'error' (a rule must name a tool of the tools table) or 'keep'; "
        "got 'ignore'",
    ),
    "tool-flag-typo": Broken(
        "policy.toml",
        "version = 1\n\n[tools.deploy]\napproval_requird = true\n",
        "InvalidSnapshotError",
        "{file}:4: tools.deploy.approval_requird: expected no such key (known: always_ask, "
        "approval_required, auto_approvable, permission_kind, risk_level, side_effect_scope; did you mean "
        "'approval_required'?); got True",
    ),
    "side-effect-scope-typo": Broken(
        "policy.toml",
        'version = 1\n\n[tools.read_file]\nside_effect_scope = "nothing"\n',
        "InvalidSnapshotError",
        "{file}:4: tools.read_file.side_effect_scope: expected one of 'external', 'none', 'project', "
        "'session', 'system', 'unknown', 'workspace'; got 'nothing'",
    ),
    "risk-level-typo": Broken(
        "policy.toml",
        'version = 1\n\n[tools.deploy]\nrisk_level = "hihg"\n',
        "InvalidSnapshotError",
        "{file}:4: tools.deploy.risk_level: expected one of 'low', 'medium', 'high', 'critical'; got 'hihg'",
    ),
    "permission-kind-is-a-tool-name": Broken(
        "policy.toml",
        'version = 1\n\n[tools.run_shell]\npermission_kind = "bash"\n',
        "InvalidSnapshotError",
        "{file}:4: tools.run_shell.permission_kind: expected 'shell', 'path' or 'url', optionally with "
        "':<argument key>'; got 'bash'",
    ),
    "flag-as-a-string": Broken(
        "policy.toml",
        'version = 1\n\n[tools.deploy]\nalways_ask = "true"\n',
        "InvalidSnapshotError",
        "{file}:4: tools.deploy.always_ask: expected true or false; got 'true'",
    ),
    "auto-approve-as-one": Broken(
        "policy.json",
        '{\n  "version": 1,\n  "auto_approve": {"fetch": 1}\n}\n',
        "InvalidSnapshotError",
        "{file}:3: auto_approve.fetch: expected true (leave a tool out to not auto-approve it); got 1",
    ),
    "rule-missing-its-closing-parenthesis": Broken(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + '\n[permissions]\nallow = ["run_shell(git status"]\n',
        "InvalidSnapshotError",
        "{file}:10: permissions.allow[0]: expected a rule (a '(' without a closing ')' at the end); got "
        "'run_shell(git status'",
    ),
    "rule-with-a-stray-colon-for-a-parenthesis": Broken(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + '\n[permissions]\ndeny = ["run_shell:rm -rf *"]\n',
        "InvalidSnapshotError",
        "{file}:10: permissions.deny[0]: expected a rule (a tool name holds no whitespace, control "
        "characters or parentheses; did you mean run_shell(rm -rf *)?); got 'run_shell:rm -rf *'",
    ),
    "rule-with-a-parenthesis-too-many": Broken(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + '\n[permissions]\ndeny = ["run_shell(rm -rf *))"]\n',
        "InvalidSnapshotError",
        "{file}:10: permissions.deny[0]: expected a rule (command specifier 'rm -rf *)': it holds an "
        "unbalanced ')'); got 'run_shell(rm -rf *))'",
    ),
    "rule-list-as-a-string": Broken(
        "policy.toml",
        'version = 1\n\n[permissions]\ndeny = "run_shell(rm *)"\n',
        "InvalidSnapshotError",
        "{file}:4: permissions.deny: expected an array; got 'run_shell(rm *)'",
    ),
    "specifier-on-a-misspelt-tool-without-a-tools-table": Broken(
        "policy.toml",
        'version = 1\n\n[permissions]\ndeny = ["bsah(rm -rf *)"]\n',
        "InvalidSnapshotError",
        "{file}:4: permissions.deny[0]: expected a rule (the tool 'bsah' has no known kind, so its specifier "
        "cannot be read; did you mean 'bash'? Otherwise declare one: kinds={{'bsah': 'shell'}} (or 'path' "
        "or 'url', with an argument key as in 'shell:script'), or permission_kind = \"shell\" under "
        "[tools.bsah] in a policy file); got 'bsah(rm -rf *)'",
    ),
    "hook-key-typo": Broken(
        "policy.toml",
        'version = 1\n\n[[hooks.PreToolUse]]\nmatchr = "run_shell"\nhooks = []\n',
        "InvalidSnapshotError",
        "{file}:4: hooks.PreToolUse[0].matchr: expected no such key (known: hooks, matcher; did you mean "
        "'matcher'?); got 'run_shell'",
    ),
    "hook-timeout-negative": Broken(
        "policy.toml",
        'version = 1\n\n[[hooks.PreToolUse]]\nmatcher = "run_shell"\n\n[[hooks.PreToolUse.hooks]]\n'
        'type = "command"\ncommand = "guard"\ntimeout = -5\n',
        "InvalidSnapshotError",
        "{file}:9: hooks.PreToolUse[0].hooks[0].timeout: expected seconds more than 0 and at most 600; "
        "got -5",
    ),
    "json-trailing-comma": Broken(
        "policy.json",
        '{\n  "version": 1,\n  "mode": "read_only",\n}\n',
        "InvalidSnapshotError",
        "{file}: invalid JSON: Expecting property name enclosed in double quotes: line 4 column 1 (char 41)",
    ),
    "json-key-twice": Broken(
        "policy.json",
        '{\n  "version": 1,\n  "mode": "full_access",\n  "mode": "read_only"\n}\n',
        "InvalidSnapshotError",
        "{file}: invalid JSON: the key 'mode' appears twice in one object",
    ),
    "toml-unclosed-string": Broken(
        "policy.toml",
        'version = 1\n\n[permissions]\ndeny = ["run_shell(rm *)]\n',
        "InvalidSnapshotError",
        "{file}: invalid TOML: Illegal character '\\n' (at line 4, column 26)",
    ),
    "toml-rules-written-as-json": Broken(
        "policy.toml",
        '{"version": 1, "permissions": {"deny": ["run_shell(rm *)"]}}\n',
        "InvalidSnapshotError",
        "{file}: invalid TOML: Invalid statement (at line 1, column 1)",
    ),
    "empty-toml-file": Broken(
        "policy.toml",
        "",
        "InvalidSnapshotError",
        "{file}: version: expected a value (the key is required); got None",
    ),
    "empty-json-file": Broken(
        "policy.json",
        "",
        "InvalidSnapshotError",
        "{file}: invalid JSON: Expecting value: line 1 column 1 (char 0)",
    ),
    "version-two": Broken(
        "policy.toml",
        "version = 2\n",
        "InvalidSnapshotError",
        "{file}: version: expected 1; got 2",
    ),
    "a-folder-where-the-file-should-be": Broken(
        "policy.toml",
        None,
        "IsADirectoryError",
        "[Errno 21] Is a directory: '{file}'",
    ),
}

# -- settings files (a project's .agent/settings.json) ------------------------------------------------------

BROKEN_SETTINGS: Final[dict[str, Broken]] = {
    "permissions-key-typo": Broken(
        "settings.json",
        '{\n  "permisions": {\n    "deny": ["Bash(rm *)"]\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:2: permisions: expected no such key (known: $schema, hooks, permissions; did you mean "
        "'permissions'?); got {{'deny': ['Bash(rm *)']}}",
    ),
    "rule-list-typo": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "deny": ["Bash(rm *)"],\n    "alow": ["Read"]\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:4: permissions.alow: expected no such key (known: additionalDirectories, allow, ask, "
        "defaultMode, deny, disableBypassPermissionsMode; did you mean 'allow'?); got ['Read']",
    ),
    "default-mode-typo": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "defaultMode": "acceptedits"\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:3: permissions.defaultMode: expected one of 'default', 'acceptEdits', 'plan', "
        "'bypassPermissions', 'dontAsk', 'auto'; got 'acceptedits'",
    ),
    "bypass-lock-as-true": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "disableBypassPermissionsMode": true\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:3: permissions.disableBypassPermissionsMode: expected 'disable'; got True",
    ),
    "directories-as-a-string": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "additionalDirectories": "../shared"\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:3: permissions.additionalDirectories: expected an array; got '../shared'",
    ),
    "rule-missing-its-closing-parenthesis": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "deny": [\n      "Bash(rm -rf *"\n    ]\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:4: permissions.deny[0]: a '(' without a closing ')' at the end",
    ),
    "rule-on-a-misspelt-tool": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "deny": ["Bsah(rm -rf *)"]\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:3: permissions.deny[0]: the tool 'Bsah' has no known kind, so its specifier cannot be read; "
        "did you mean 'Bash'? Otherwise declare one: kinds={{'Bsah': 'shell'}} (or 'path' or 'url', with an "
        "argument key as in 'shell:script'), or permission_kind = \"shell\" under [tools.Bsah] in a policy "
        "file",
    ),
    "hooks-event-typo": Broken(
        "settings.json",
        '{\n  "hooks": {\n    "PretoolUse": []\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:3: hooks.PretoolUse: expected no such key (known: PreToolUse; did you mean 'PreToolUse'?); "
        "got []",
    ),
    "hook-entry-key-typo": Broken(
        "settings.json",
        '{\n  "hooks": {\n    "PreToolUse": [\n      {"matcher": "Bash", "hooks": [\n'
        '        {"type": "command", "comand": "guard"}\n      ]}\n    ]\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}:5: hooks.PreToolUse[0].hooks[0].comand: expected no such key (known: command, shell, "
        "timeout, type; did you mean 'command'?); got 'guard'",
    ),
    "json-syntax-error": Broken(
        "settings.json",
        '{\n  "permissions": {\n    "deny": ["Bash(rm *)",]\n  }\n}\n',
        "InvalidSnapshotError",
        "{file}: invalid JSON: Expecting value: line 3 column 27 (char 47)",
    ),
    "empty-file": Broken(
        "settings.json",
        "",
        "InvalidSnapshotError",
        "{file}: invalid JSON: Expecting value: line 1 column 1 (char 0)",
    ),
    "an-array-not-an-object": Broken(
        "settings.json",
        '["Bash(rm *)"]\n',
        "InvalidSnapshotError",
        "{file}: snapshot: expected a settings object; got ['Bash(rm *)']",
    ),
    "a-folder-where-the-file-should-be": Broken(
        "settings.json",
        None,
        "IsADirectoryError",
        "[Errno 21] Is a directory: '{file}'",
    ),
}

# -- the mistakes that loaded and let calls through; each now decided without a proceed --------------------

DECIDED: Final[dict[str, Decided]] = {
    "only-an-allow-rule": Decided(
        "policy.toml",
        'version = 1\n\n[permissions]\nallow = ["Bash(git status:*)"]\n',
        "Bash",
        {"command": "git status; rm -rf ~"},
        "pending",
        "default",
    ),
    "only-a-version": Decided(
        "policy.toml", "version = 1\n", "run_shell", {"command": "rm -rf /"}, "pending", "default"
    ),
    "a-deny-of-the-whole-tool-beside-a-typo": Decided(
        "policy.toml",
        "version = 1\n\n" + _TOOLS + '\n[permissions]\ndeny = ["run_shell(rm *)"]\nallow = ["read_file"]\n',
        "run_shell",
        {"command": "rm -rf build"},
        "block",
        "deny_rule",
    ),
}
