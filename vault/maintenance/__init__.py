"""Keeping the vault small and useful: the run engine every maintenance job records itself with,
capping categories, consolidation of daily notes, retention of entries.

Principles (shared by the session-side steps in sessions_app.maintenance and the composition in
memoryproject.maintenance):

- Nothing is lost by compaction: trimmed messages and merged entries are archived (still searchable when
  asked for), never deleted, and every summary links to what it merged (EntryMerge).
- Each run is recorded as a CompactionRun with counts per step and the list of changes with reasons.
  A dry run executes the very same code inside a transaction that is rolled back, so it reports exactly
  what a real run would do and changes nothing.
- Locks are in the database (row locks, advisory locks), never in a process, so concurrent web workers,
  job workers and agents writing at the same time lose nothing.
"""
