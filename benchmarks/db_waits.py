"""What the server's database sessions were doing during a load phase: `pg_stat_activity` sampled every
few milliseconds from a thread of the load client, so a phase that leaves the cores idle shows where its
requests wait (the write-ahead log's flush at commit, a lock, or the web process itself between two
statements of an open transaction).

Each sample counts every client backend of the database but the sampler's own in one of these states:
`running` (a statement on the CPU), `<type>:<event>` (a statement waiting: `IO:WalSync` is a commit
waiting for the disk, `Lock:advisory` a lock held by another transaction), `in transaction` (a
transaction open while the web process works between its statements) and `idle` (no transaction: the
request is in the web process, or in flight, or there is none). The report gives each state's mean
number of backends over the phase: by Little's law, the requests' time in the database split the same
way (idle is left out of the report: it counts every pooled connection, in use or not).
"""

import threading
from collections import Counter

from django.db import connections

SAMPLE_SECONDS = 0.005

# One row per state: the count of client backends in it (the sampler's own left out).
SAMPLE_SQL = """
SELECT CASE
         WHEN state = 'active' AND wait_event_type IS NULL THEN 'running'
         WHEN state = 'active' THEN wait_event_type || ':' || wait_event
         WHEN starts_with(state, 'idle in transaction') THEN 'in transaction'
         ELSE 'idle'
       END AS what,
       count(*)
  FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()
 GROUP BY 1
"""


class WaitSampler:
    """Sample the database's sessions in a thread between start() and stop(); `means()` is each
    state's mean number of backends over the samples taken."""

    def __init__(self, interval: float = SAMPLE_SECONDS):
        self.interval = interval
        self.samples = 0
        self.counts: Counter = Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "WaitSampler":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> "WaitSampler":
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self

    def _run(self) -> None:
        # Django gives this thread its own connection; it is closed when the sampling ends.
        try:
            with connections["default"].cursor() as cursor:
                while True:  # at least one sample, however short the phase
                    cursor.execute(SAMPLE_SQL)
                    self.add(dict(cursor.fetchall()))
                    if self._stop.wait(self.interval):
                        break
        finally:
            connections["default"].close()

    def add(self, sample: dict[str, int]) -> None:
        self.samples += 1
        self.counts.update(sample)

    def means(self) -> dict[str, float]:
        if not self.samples:
            return {}
        return {what: n / self.samples for what, n in self.counts.most_common()}

    def line(self) -> str:
        """`database sessions (mean of N samples): in transaction 2.0, running 1.2, IO:WalSync 0.4, ...`,
        the states other than idle that held at least 0.05 backends on average (idle counts the pooled
        connections of every web thread, used or not); empty without any."""
        shown = [
            f"{what} {mean:.2f}" for what, mean in self.means().items() if what != "idle" and mean >= 0.05
        ]
        if not shown:
            return ""
        return f"\n          database sessions (mean of {self.samples} samples): " + ", ".join(shown)
