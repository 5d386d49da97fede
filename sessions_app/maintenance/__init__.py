"""Keeping sessions small: expired checkpoints removed, long sessions trimmed (their decisions and lessons
distilled into the vault first), extraction after a conversation, retention of messages. Each step
records itself on vault's run engine (vault.maintenance.runs); memoryproject.maintenance composes the
runs."""
