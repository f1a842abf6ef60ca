"""Loading configuration: what builds a policy from the files people write.

``_policy_file`` reads a policy file (JSON or TOML, strictly) into an ``ApprovalPolicy`` (``load_policy``).
Above the policies, which it builds; it reads its files with the settings package's strict text readers.
"""
