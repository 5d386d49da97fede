"""How many threads the local model embeds a search query on, chosen by measurement as the process runs.

A query's embedding is the longest step of a hybrid search, and how many threads make it fastest
depends on the machine and on its load at the moment: on one 2-core machine two threads halved it
(25.5 -> 13.2 ms) while nothing else ran, on an earlier one they were slower, and with the cores busy
(other processes, PostgreSQL's lexical arm) an OpenMP team of two waits at every barrier for a thread
the scheduler has put aside: 113 ms a query against 37 on one thread, and three times the CPU
(docs/benchmarks.md, twenty-seventh session). The vector does not depend on the thread count (each
output is computed by one thread), so the choice changes only the time.

ThreadsChooser keeps each candidate's last few times (milliseconds a token) and picks the fastest:
first every candidate a few times in turn, then the best, with one query in EXPLORE_EVERY (or
EXPLORE_EVERY_SLOW when the other candidate was far slower) on another candidate so that a change of
load is followed. More threads must be clearly faster (MORE_THREADS_GAIN) to be chosen: they also take
cores the rest of the search needs.
"""

import logging
import threading
from collections import deque
from statistics import median

logger = logging.getLogger(__name__)

TRIALS = 3  # times of each candidate before choosing
WINDOW = 5  # times kept per candidate; the choice compares their medians
EXPLORE_EVERY = 50
EXPLORE_EVERY_SLOW = 200  # when the other candidate's median was twice the best's or more
MORE_THREADS_GAIN = 0.85  # more threads chosen only below this share of fewer threads' time


def candidates_for(cores: int | None) -> tuple[int, ...]:
    """One thread, and half the cores (at least two) when there are at least two."""
    cores = cores or 1
    return (1,) if cores < 2 else (1, max(2, cores // 2))


class ThreadsChooser:
    def __init__(self, candidates: tuple[int, ...]):
        self.candidates = tuple(sorted(set(candidates)))
        self._times = {c: deque(maxlen=WINDOW) for c in self.candidates}
        self._picks = 0
        self._explored = 0  # index of the last candidate explored
        self._chosen: int | None = None  # the last best, to log a change
        self._lock = threading.Lock()

    def pick(self) -> int:
        """The thread count for the next query."""
        with self._lock:
            self._picks += 1
            untried = [c for c in self.candidates if len(self._times[c]) < TRIALS]
            if untried:  # in turn: the candidate with the fewest times
                return min(untried, key=lambda c: (len(self._times[c]), c))
            best = self.best()
            if best != self._chosen:
                logger.info(
                    "search queries embedded on %d thread(s): milliseconds a token %s",
                    best,
                    {c: round(median(t), 2) for c, t in self._times.items()},
                )
                self._chosen = best
            others = [c for c in self.candidates if c != best]
            if not others:
                return best
            self._explored = (self._explored + 1) % len(others)
            other = others[self._explored]
            slow = median(self._times[other]) >= 2 * median(self._times[best])
            every = EXPLORE_EVERY_SLOW if slow else EXPLORE_EVERY
            return other if self._picks % every == 0 else best

    def best(self) -> int:
        """The candidate with the lowest median time (the fewest threads unless more are clearly
        faster); the fewest threads while nothing is measured."""
        chosen = self.candidates[0]
        for c in self.candidates[1:]:
            if self._times[c] and (
                not self._times[chosen]
                or median(self._times[c]) < MORE_THREADS_GAIN * median(self._times[chosen])
            ):
                chosen = c
        return chosen

    def record(self, threads: int, seconds: float, tokens: int) -> None:
        """A query of `tokens` tokens took `seconds` on `threads` threads."""
        if threads not in self._times:
            return
        with self._lock:
            self._times[threads].append(seconds * 1000 / max(tokens, 1))

    def state(self) -> dict[int, float | None]:
        """Each candidate's median milliseconds a token (None before its first time)."""
        with self._lock:
            return {c: (median(t) if t else None) for c, t in self._times.items()}
