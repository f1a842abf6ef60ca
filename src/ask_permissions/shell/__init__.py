"""The one place that knows bash: how a command is read, and what the programs it runs do."""
