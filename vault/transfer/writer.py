"""The writer of an import: agents, entries, files and the project context (these two in
`files_writer`), idempotently, through the vault's services. Sessions and checkpoints found in a layout
go to `sessions_writer`, given by the app that owns them (sessions_app.transfer); without one they are
counted as skipped."""

import secrets
import unicodedata
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from memoryproject.copy_rows import rows_insert_new
from memoryproject.errors import DomainError
from vault import services, trust
from vault.models import (
    Agent,
    Category,
    DeletionAudit,
    EntrySource,
    EntryStatus,
    EntryVersion,
    Project,
    VaultEntry,
    VersionAction,
)
from vault.redaction import redact_for_project
from vault.services.audit import content_sha
from vault.text import tag_valid, tags_normalise, text_check
from vault.transfer.common import (
    BATCH_SIZE,
    IMPORT_ATTEMPTS,
    PROGRESS_EVERY,
    EntryItem,
    ImportReport,
    ParsedCheckpoint,
    ParsedConversation,
    _hash,
    date_parse,
    legacy_id_fit,
    then,
)
from vault.transfer.files_writer import FilesWriter
from vault.transfer.histories import IMPORT_AUTHOR, entry_changed_here, import_version_drop
from vault.transfer.session_tags import SESSION_TAG_RE, session_tags_remap


def _without_session_tags(tags: Iterable[str]) -> list[str]:
    return [tag for tag in tags if not SESSION_TAG_RE.match(tag)]


# --- The writer: agents and entries (workspace files and the project context: FilesWriter) -------


class Importer(FilesWriter):
    """Writes what the source-kind functions found, idempotently, through the vault's services."""

    def __init__(
        self,
        *,
        project: Project,
        report: ImportReport,
        agent_map: dict[str, str] | None = None,
        default_agent: str = "main",
        sessions_writer: Callable[["Importer", ParsedConversation | ParsedCheckpoint], None] | None = None,
    ):
        self.project = project
        self.report = report
        self.agent_map = agent_map or {}
        self.default_agent = default_agent
        self.sessions_writer = sessions_writer
        self._agents: dict[str, Agent | None] = {}
        self.agents_created: set[int] = set()  # pks of the agents this import created (FilesWriter)
        self._seen: dict[int, tuple[set[str], set[tuple]]] = {}
        self._pending: dict[int, list[VaultEntry]] = {}
        # agent pk -> (successor, predecessor, where, the source's folder)
        self._links: dict[int, list[tuple[str, str, str, str]]] = {}
        # The source's `updated_at` of each entry this run creates, by (agent pk, legacy id): a link that
        # chains_link makes is already in that state, and must not date the entry to the import.
        self._source_updated: dict[tuple[int, str], datetime] = {}
        # (agent pk, the source's agent folder, source id) -> the id an entry whose source id was already
        # another entry's was stored under. By folder: two source agents mapped onto one (--agent-map)
        # may both use an id, and each folder's supersede links, versions, review items and session state
        # rows name its own entry.
        self._renamed: dict[tuple[int, str, str], str] = {}
        self._gone: dict[
            int, tuple[set[tuple], set[tuple]]
        ] = {}  # (agent pk, source id) -> the id it was stored under
        self._created_total = 0
        # (target agent pk, chat id) -> the source agent whose session took it in this run: two source
        # agents mapped onto one keep their sessions of the same chat id apart (sessions_app's writer).
        self.chat_claims: dict[tuple[int, str], str] = {}
        # target agent pk -> the newest checkpoint this run found for it: of two source agents mapped onto
        # one, the older checkpoint is kept as a handoff entry (sessions_app's writer).
        self.checkpoint_claims: dict[int, ParsedCheckpoint] = {}
        # The sessions the parsers find wait here and are stored once the vault part is written, in
        # transactions of their own, each rolled back at once in a dry run
        # (conversations.sessions_pending_store): a live agent waits for one of them, not the import.
        self.sessions_pending: list = []
        self.attempts = IMPORT_ATTEMPTS  # runs of one of those transactions that clashed, before giving up
        self.agent_names: dict[str, str] = {}  # an export's agents' display names, by folder
        # An export's session files as the sessions writer stored them: (agent folder, file key) -> (the
        # session's id here, the file's message keys -> their ids here). Entries' provenance maps through it.
        self.sessions_found: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}
        self._provenance: dict[int, list[tuple[str, tuple[str, str, list[str]]]]] = {}  # agent pk -> links
        self.review_items: list[
            tuple[Agent, dict, str]
        ] = []  # (agent, item, where), linked after the entries
        # An export's versions (`.versions.json`), by (agent pk, source folder): two source agents mapped
        # onto one keep their histories apart. Entries' (export id -> versions), stored after a flush;
        # deleted entries' (their ids at the source -> versions); workspace files' (path -> versions).
        self.entry_versions: dict[tuple[int, str], dict[str, list[dict]]] = {}
        self.entry_versions_pending: list[tuple[Agent, str, dict[str, list[dict]]]] = []
        self.deleted_versions_pending: list[tuple[Agent, dict[str, list[dict]]]] = []
        self.file_versions: dict[int, dict[str, list[dict]]] = {}
        self.project_versions: list[dict] = []  # the project context's (`.project-versions.json`)
        # Entries written with `session-{id}` tags: (agent pk, id stored under, agent folder), remapped to
        # the sessions stored here once they are (session_tags.session_tags_remap).
        self.session_tagged: list[tuple[int, str, str]] = []

    def agent_slug(self, source_id: str | None) -> str:
        source_id = (source_id or self.default_agent).strip()
        return self.agent_map.get(source_id, source_id)

    def agent_known(self, slug: str) -> Agent | None:
        """The agent `slug` (already mapped) as this import writes to it, or None when there is none."""
        if slug in self._agents:
            return self._agents[slug]
        return Agent.objects.filter(project=self.project, slug=slug).first()

    def agent(self, source_id: str | None, *, where="") -> Agent | None:
        slug = self.agent_slug(source_id)
        if slug not in self._agents:
            try:
                agent = self._agent_ensure(services.slug_check(slug, field="agent"))
            except DomainError as exc:
                self.report.problem(
                    where or slug, then(exc.detail, f"Map it with --agent-map {slug}=new-id; skipped")
                )
                agent = None
            self._agents[slug] = agent
        return self._agents[slug]

    def _agent_ensure(self, slug: str) -> Agent:
        """The project's agent `slug`, created when missing. A dry run stores a new one under a name of
        its own (`dry-run-...`, the object keeping `slug`): the row it inserts is held to its end, and an
        agent of that name created meanwhile (its first request, by a project-wide token) waited on
        that insert for the whole dry run."""
        agent = Agent.objects.filter(project=self.project, slug=slug).first()
        if agent is not None:
            return agent
        if not self.report.dry_run:
            agent = services.agent_ensure(project=self.project, slug=slug)
        else:
            agent = services.agent_ensure(
                project=self.project, slug=f"dry-run-{secrets.token_hex(8)}", name=slug
            )
            agent.slug = slug
        self.agents_created.add(agent.pk)
        return agent

    # Entries -------------------------------------------------------------------------------------

    def _seen_for(self, agent: Agent) -> tuple[dict[str, int | None], set[tuple]]:
        """The agent's stored entries: legacy id -> pk (None for one queued by this import), and the
        category + content + date keys."""
        if agent.pk not in self._seen:
            ids, keys = {}, {}
            for pk, legacy_id, category, content, created_at in VaultEntry.objects.filter(
                agent=agent
            ).values_list("pk", "legacy_id", "category", "content", "created_at"):
                if legacy_id:
                    ids[legacy_id] = pk
                keys[self._key(category, content, created_at)] = legacy_id
            self._seen[agent.pk] = (ids, keys)
        return self._seen[agent.pk]

    def _gone_for(self, agent: Agent) -> tuple[set[tuple], set[tuple]]:
        """What the agent had and lost since: the keys of its deleted entries (every content they had, from
        their versions) and the category, content hash and second of its forgotten or purged ones (from
        the deletion audit, which keeps no content). An import must not bring them back as new."""
        if agent.pk not in self._gone:
            deleted = {
                version.entry_id: date_parse(version.restore_state.get("created_at"), logged=False)
                for version in EntryVersion.objects.filter(agent=agent, action=VersionAction.DELETE)
            }
            keys = {
                self._key(category, content, deleted[entry_id])
                for entry_id, category, content in EntryVersion.objects.filter(
                    agent=agent, entry_id__in=[pk for pk, date in deleted.items() if date]
                ).values_list("entry_id", "category", "content")
            }
            forgotten = {
                (category, sha, created_at.replace(microsecond=0))
                for category, sha, created_at in DeletionAudit.objects.filter(
                    project_id=agent.project_id,
                    agent_slug=agent.slug,
                    kind="entry",
                    item_created_at__isnull=False,
                ).values_list("category", "content_sha256", "item_created_at")
            }
            self._gone[agent.pk] = (keys, forgotten)
        return self._gone[agent.pk]

    def _deleted_since(
        self, agent: Agent, category: str, content: str, created_at: datetime, key: tuple
    ) -> bool:
        deleted, forgotten = self._gone_for(agent)
        return (
            key in deleted or (category, content_sha(content), created_at.replace(microsecond=0)) in forgotten
        )

    def _stored_renamed(
        self, agent: Agent, legacy_id: str, item: EntryItem, content: str, holder: str | None
    ) -> str | None:
        """Where an entry whose source id `legacy_id` is already stored goes: None, the entry holding
        `legacy_id` is it; an id `legacy_id#...`, another entry took `legacy_id` first and this one was
        stored under that id, by an earlier run or earlier in this one (the one holding its category, text
        and date, `holder`, or, its text edited in the source since, of its category and date to the
        second); "", it is another entry, not stored yet. Without the second a run again took it for the
        entry holding `legacy_id` (another source agent's, mapped onto the same agent) and applied its
        text to that one as the source's edit."""
        prefix = f"{legacy_id}#"
        if holder is not None:
            return holder if holder.startswith(prefix) else None
        ids, _ = self._seen_for(agent)
        if self._same_entry(ids[legacy_id], content, item.created_at):
            return None
        second = item.created_at.replace(microsecond=0)
        earlier = (
            VaultEntry.objects.filter(
                agent=agent,
                category=item.category,
                legacy_id__startswith=prefix,
                created_at__gte=second,
                created_at__lt=second + timedelta(seconds=1),
            )
            .values_list("legacy_id", flat=True)
            .first()
        )
        return earlier or ""

    @staticmethod
    def _same_entry(pk: int | None, content: str, created_at: datetime) -> bool:
        """Whether the stored entry `pk`, which holds the id an imported entry has, is that entry: the
        same date (to the second), or a content it has or had before an edit. Another source's entry
        that happens to use the same id (an earlier export's small numbers, a hand-written `id:1`) is
        not, nor is one this run queued under that id (`pk` None) with another category, text or date
        (another source agent's, mapped onto the same agent)."""
        if pk is None:
            return False
        entry = VaultEntry.objects.filter(pk=pk).values("content", "created_at").first()
        if entry is None:
            return True
        if entry["created_at"].replace(microsecond=0) == created_at.replace(microsecond=0):
            return True
        texts = {content, content.strip()}
        return (
            entry["content"].strip() in texts
            or EntryVersion.objects.filter(entry_id=pk, content__in=texts).exists()
        )

    @staticmethod
    def _key(category: str, content: str, created_at: datetime) -> tuple:
        return (category, _hash(content.strip()), created_at.replace(microsecond=0).timestamp())

    def _tags(self, tags: Iterable[str], content: str, where) -> list[str]:
        clean = []
        for raw in tags:
            tag = unicodedata.normalize("NFC", str(raw).strip().lstrip("#").lower())
            if tag and tag_valid(tag) and tag not in clean:
                clean.append(tag)
            elif tag:
                self.report.problem(where, f"tag {raw!r} is not a valid tag; dropped")
        limit = settings.MEMORY_MAX_TAGS
        try:
            return tags_normalise(clean[:limit], content)[:limit]
        except DomainError:
            return clean[:limit]

    def entry_add(self, agent: Agent | None, item: EntryItem, *, where) -> bool:
        """Queue one entry unless stored already (legacy id, or category + content + date); False if skipped."""
        if agent is None:
            self.report.counts["entries skipped (no valid agent)"] += 1
            return False
        if item.category not in Category.values:
            self.report.problem(where, f"unknown category {item.category!r}; entry skipped")
            return False
        # Redacted before anything else, so re-imports compare against what was stored.
        content = redact_for_project(
            item.content if item.verbatim else item.content.strip(), agent.project_id
        )
        try:
            text_check(content)
        except DomainError as exc:
            self.report.problem(where, f"entry {item.legacy_id or '?'}: {exc.detail}; skipped")
            return False
        ids, keys = self._seen_for(agent)
        legacy_id = legacy_id_fit(item.legacy_id)
        key = self._key(item.category, content, item.created_at)
        if legacy_id in ids:
            renamed = self._stored_renamed(agent, legacy_id, item, content, keys.get(key))
            if renamed == "":
                self.report.problem(
                    where,
                    f"id {item.legacy_id} is already that of another entry of {agent.slug} (another date and "
                    "content); stored as a new entry",
                )
                renamed = legacy_id_fit(f"{legacy_id}#{_hash(item.category, content)[:16]}")
            if renamed is not None:
                self._renamed[(agent.pk, item.folder, legacy_id)] = legacy_id = renamed
        if item.supersedes:
            self._links.setdefault(agent.pk, []).append(
                (legacy_id, legacy_id_fit(item.supersedes), str(where), item.folder)
            )
        if ids.get(legacy_id) is not None:  # stored before this run, and the same entry (a clash was renamed)
            self._entry_follow(ids[legacy_id], item, content, where)
            return False
        if legacy_id in ids or key in keys:
            self.report.counts["entries already imported (skipped)"] += 1
            return False
        if self._deleted_since(agent, item.category, content, item.created_at, key):
            self.report.counts["entries deleted or forgotten here since (skipped)"] += 1
            return False
        ids[legacy_id] = None
        keys[key] = legacy_id
        self._source_updated[(agent.pk, legacy_id)] = max(item.updated_at or item.created_at, item.created_at)
        self._links_note(agent.pk, legacy_id, item)
        importance = item.importance if item.importance is not None and 0.0 <= item.importance <= 1.0 else 0.5
        status = item.status
        if status not in EntryStatus.values:
            # Held, not made active: a status this version does not know may be one that keeps the entry
            # out of the context (a typo of pending, a newer version's state).
            self.report.problem(where, f"unknown status {status!r}; held for review as pending")
            status = EntryStatus.PENDING
        self._pending.setdefault(agent.pk, []).append(
            VaultEntry(
                project_id=agent.project_id,
                agent=agent,
                category=item.category,
                content=content,
                content_hash=trust.content_hash(content),
                sketch=trust.sketch(trust.word_set(content)),
                tags=self._tags(item.tags, content, where),
                importance=float(importance),
                status=status,
                source=item.source or EntrySource.IMPORT,
                created_by=item.author or "import",
                created_at=item.created_at,
                updated_at=self._source_updated[(agent.pk, legacy_id)],
                access_count=item.access_count,
                last_accessed_at=item.last_accessed_at,
                confidence=item.confidence,
                legacy_id=legacy_id,
            )
        )
        self.report.counts[f"entries created ({item.category})"] += 1
        if sum(len(batch) for batch in self._pending.values()) >= BATCH_SIZE:
            self.flush()
        return True

    def _links_note(self, agent_pk: int, legacy_id: str, item: EntryItem, *, provenance: bool = True) -> None:
        """What of an entry stored under `legacy_id` is pointed at the sessions the import stores, once
        it has: its provenance and its `session-{id}` tags."""
        if provenance and item.provenance is not None:
            self._provenance.setdefault(agent_pk, []).append((legacy_id, item.provenance))
        if item.folder and any(SESSION_TAG_RE.match(str(tag).lstrip("#").lower()) for tag in item.tags):
            self.session_tagged.append((agent_pk, legacy_id, item.folder))

    def _entry_follow(self, pk: int, item: EntryItem, content: str, where) -> None:
        """An entry imported before, met again (a newer export): the source's edit of its content, tags
        or importance is applied (versioned) unless the entry was changed here too (it has a version
        that neither an import wrote nor the source's history holds), in which case the change made here
        is kept and counted. Tags `session-{id}` are left out of the comparison: the import points them
        at the sessions here (session_tags), the source's tags once written too."""
        stored = (
            VaultEntry.objects.filter(pk=pk)
            .values("content", "tags", "importance", "agent_id", "legacy_id")
            .first()
        )
        importance = item.importance if item.importance is not None and 0.0 <= item.importance <= 1.0 else 0.5
        changes = {}
        if stored is not None and stored["content"] != content:
            changes["content"] = content
        if stored is not None and _without_session_tags(
            tags := self._tags(item.tags, content, where)
        ) != _without_session_tags(stored["tags"]):
            changes["tags"] = tags
        if stored is not None and item.importance is not None and importance != stored["importance"]:
            changes["importance"] = importance
        if not changes:
            self.report.counts["entries already imported (skipped)"] += 1
            return
        incoming = self.entry_versions.get((stored["agent_id"], item.folder), {}).get(item.legacy_id, [])
        if entry_changed_here(pk, incoming):
            self.report.counts["entries kept as edited here (changed in the source too)"] += 1
            return
        try:
            with self._written():
                services.entry_update(
                    entry_id=pk, changes=services.EntryChanges(**changes), changed_by=IMPORT_AUTHOR
                )
                import_version_drop(EntryVersion.objects.filter(entry_id=pk), incoming)
        except DomainError as exc:
            self.report.problem(
                where, f"the source's edit of entry {item.legacy_id} not applied: {exc.detail}"
            )
            return
        self.report.counts["entries updated (changed in the source)"] += 1
        if "tags" in changes:
            self._links_note(stored["agent_id"], stored["legacy_id"], item, provenance=False)

    def state_save(self) -> Callable[[], None]:
        """What a rolled-back transaction of the import must forget: returns the function that puts the
        report and the claims back as they are now, and drops what was read or queued since."""
        counts, problems = self.report.counts.copy(), list(self.report.problems)
        chats, checkpoints = dict(self.chat_claims), dict(self.checkpoint_claims)

        def restore() -> None:
            self.report.counts, self.report.problems = counts, problems
            self.chat_claims, self.checkpoint_claims = chats, checkpoints
            self._seen, self._gone, self._pending = {}, {}, {}

        return restore

    def flush(self) -> None:
        """Store the queued entries. The unique (agent, legacy_id) constraint makes a concurrent import of
        the same source skip, not duplicate: an entry it stored first counts as skipped here, not created."""
        counts = self.report.counts
        for batch in self._pending.values():
            if not batch:
                continue
            stored = rows_insert_new(batch)
            for entry in batch:
                if entry.pk is None:  # left out by the constraint
                    created = f"entries created ({entry.category})"
                    counts[created] -= 1
                    if counts[created] <= 0:
                        del counts[created]
                    counts["entries already imported (skipped)"] += 1
            before = self._created_total
            self._created_total += len(stored)
            if self._created_total // PROGRESS_EVERY > before // PROGRESS_EVERY:
                self.report.say(f"  ... {self._created_total} entries stored")
        self._pending = {}

    def entry_pks(self, agent_pk: int, source_ids: Iterable[str], folder: str = "") -> dict[str, int]:
        """The stored entries of the agent under these source ids of the source's agent `folder` (an id
        that clashed, under the id it was stored as), by source id; an id not stored is left out."""
        stored_as = {
            source: self._renamed.get((agent_pk, folder, legacy_id_fit(source)), legacy_id_fit(source))
            for source in source_ids
        }
        rows = dict(
            VaultEntry.objects.filter(agent_id=agent_pk, legacy_id__in=set(stored_as.values())).values_list(
                "legacy_id", "pk"
            )
        )
        return {source: rows[legacy_id] for source, legacy_id in stored_as.items() if legacy_id in rows}

    def chains_link(self) -> None:
        """Link each imported entry to the entry it supersedes (both by their source ids, in the same
        agent), as the source had them, with entry_supersede: the predecessor is marked superseded (an
        entry imported active before, superseded in a newer export), and a link that would make a cycle,
        take an entry another already supersedes, or whose predecessor is not here, is reported and not
        made. A link already there is left. An entry not stored under its source id (the import matched it
        to a stored entry by its content) keeps the chain it has. An entry this run created keeps the source's
        `updated_at`: the state it was exported in has the link."""
        self.flush()
        for agent_pk, links in self._links.items():
            links = [
                (successor, self._renamed.get((agent_pk, folder, predecessor), predecessor), where)
                for successor, predecessor, where, folder in links
            ]
            wanted = {source for link in links for source in link[:2]}
            rows = dict(
                VaultEntry.objects.filter(agent_id=agent_pk, legacy_id__in=wanted).values_list(
                    "legacy_id", "pk"
                )
            )
            for successor, predecessor, where in links:
                if successor not in rows:  # not stored under its source id: matched by content, or skipped
                    continue
                if predecessor not in rows:
                    self.report.problem(where, f"supersedes {predecessor}, which is not here; link not made")
                    continue
                new_pk, old_pk = rows[successor], rows[predecessor]
                if VaultEntry.objects.filter(pk=new_pk, supersedes_id=old_pk).exists():
                    continue
                try:
                    with transaction.atomic():
                        services.entry_supersede(new_id=new_pk, old_id=old_pk, changed_by="import")
                except DomainError as exc:
                    self.report.problem(
                        where, f"supersedes {predecessor}: " + then(exc.detail, "Link not made")
                    )
                    continue
                for pk, legacy_id in ((new_pk, successor), (old_pk, predecessor)):
                    if (when := self._source_updated.get((agent_pk, legacy_id))) is not None:
                        VaultEntry.objects.filter(pk=pk).update(updated_at=when)
                self.report.counts["supersede links made"] += 1
        self._links = {}

    def provenance_link(self) -> None:
        """Point each entry this import created at the session and messages it came from, as stored here
        from the export's session files (`sessions_found`, which the sessions writer fills): their ids
        here differ from the export's. A session the import did not store (not in the export: purged
        since, or skipped) leaves the entry without provenance, and a message not in its file is left
        out; both are counted. Entries matched to stored ones keep theirs."""
        self.flush()
        for agent_pk, links in self._provenance.items():
            rows = dict(
                VaultEntry.objects.filter(
                    agent_id=agent_pk, legacy_id__in={legacy_id for legacy_id, _ in links}
                ).values_list("legacy_id", "pk")
            )
            linked = []
            for legacy_id, (folder, session_key, message_keys) in links:
                found = self.sessions_found.get((folder, session_key))
                if legacy_id not in rows:
                    continue
                if found is None:
                    self.report.counts[
                        "entries whose source session is not in the export (provenance left empty)"
                    ] += 1
                    continue
                session_pk, messages = found
                message_pks = [messages[key] for key in message_keys if key in messages]
                if len(message_pks) < len(message_keys):
                    self.report.counts["source message ids not in the export (dropped)"] += len(
                        message_keys
                    ) - len(message_pks)
                linked.append(
                    VaultEntry(
                        pk=rows[legacy_id], source_session_id=session_pk, source_message_ids=message_pks
                    )
                )
            if linked:
                VaultEntry.objects.bulk_update(
                    linked, ["source_session_id", "source_message_ids"], batch_size=BATCH_SIZE
                )
                self.report.counts["entries linked to their source session"] += len(linked)
        self._provenance = {}
        session_tags_remap(self)
