import time
from collections import deque

from django.core.management.base import BaseCommand, CommandError

from search.embedding_index import embeddings_refresh, vector_storage_ensure
from search.semantic import semantic_status

RATE_WINDOW = 20.0  # seconds of progress the rate is measured over
BATCH_MAX = 2048  # MEMORY_EMBEDDINGS_BATCH's bound


class Command(BaseCommand):
    help = (
        "Embed every entry, message and workspace file whose embedding is missing or stale (new, edited, "
        "or made by another model), now, with a progress bar. The background job does the same a little "
        "at a time."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would be embedded, embed nothing"
        )
        parser.add_argument("--batch-size", type=int, default=None, help="texts per model call")

    def handle(self, *args, **options):
        size = options["batch_size"]
        if size is not None and not 1 <= size <= BATCH_MAX:
            # 0 fell back to the default and a negative size embedded nothing, exiting 0 with all pending.
            raise CommandError(
                f"--batch-size must be between 1 and {BATCH_MAX} (as MEMORY_EMBEDDINGS_BATCH), got {size}"
            )
        status = semantic_status(with_pending=False)
        if status["backend"] == "off":
            self.stderr.write(self.style.WARNING(status["detail"]))
            return
        # Without pgvector the refresh still tries to create the extension, which may have been
        # installed since the migration ran.
        if not options["dry_run"] and not status["enabled"] and not vector_storage_ensure():
            self.stderr.write(self.style.WARNING(status["detail"]))
            return
        started = time.perf_counter()
        outcome = embeddings_refresh(
            dry_run=options["dry_run"], batch_size=options["batch_size"], progress=self._progress
        )
        if options["dry_run"]:
            self.stdout.write(
                f"[dry run] {outcome.pending} item(s) would be embedded with {status['model']}."
            )
            return
        self.stdout.write("")
        if outcome.skipped:  # nothing was done: "0 still pending" would say everything is embedded
            raise CommandError(f"Nothing was embedded: {outcome.skipped}. Run it again when that one ends.")
        self.stdout.write(
            f"Embedded {outcome.embedded} item(s) ({outcome.chunks} chunks embedded, {outcome.reused} unchanged"
            f" chunks kept) with {status['model']} in "
            f"{time.perf_counter() - started:.1f} s; removed {outcome.removed} embedding(s) of deleted items; "
            f"{outcome.pending} still pending."
        )
        if outcome.failed:
            self.stderr.write(
                f"{outcome.failed} item(s) refused by the embeddings server, even alone (they stay pending): "
                + "; ".join(outcome.errors)
            )

    def _progress(self, done: int, total: int, now: float | None = None) -> None:
        """One progress line. The rate and the time left come from the last RATE_WINDOW seconds, not
        from the start: items are embedded kind by kind, and a day's note (several long chunks) takes
        many times a message's time, so an average over the whole run promised seconds where minutes
        were left."""
        now = time.perf_counter() if now is None else now
        if not hasattr(self, "_marks"):
            self._marks = deque()
        self._marks.append((now, done))
        while len(self._marks) > 2 and now - self._marks[1][0] >= RATE_WINDOW:
            self._marks.popleft()
        (then, done_then) = self._marks[0]
        rate = (done - done_then) / (now - then) if now > then else 0.0
        width = 30
        filled = width if total == 0 else min(width, width * done // total)
        eta = f", {(total - done) / rate:.0f} s left" if rate > 0 and done < total else ""
        self.stdout.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} items, {rate:.1f} items/s{eta}  ",
            ending="",
        )
        self.stdout.flush()
