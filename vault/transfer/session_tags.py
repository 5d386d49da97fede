"""Entries' `session-{id}` tags after an import: extraction tags what it writes with the id of the session
it came from, an id of the exporting server. Once the import has stored the export's sessions, each such
tag is pointed at the session stored here from the file `sessions/{id}.json` of the entry's agent folder;
a tag whose session is not in the export is kept as it is, and counted."""

import re

from vault.models import VaultEntry
from vault.transfer.common import BATCH_SIZE

SESSION_TAG_RE = re.compile(r"^session-(?P<id>\d+)$")


def session_tags_remap(importer) -> None:
    """Point the `session-{id}` tags of the entries this import wrote (`importer.session_tagged`) at the
    sessions it stored (`importer.sessions_found`, by agent folder and file key)."""
    report = importer.report
    wanted: dict[int, dict[str, str]] = {}  # agent pk -> id stored under -> agent folder
    for agent_pk, legacy_id, folder in importer.session_tagged:
        wanted.setdefault(agent_pk, {})[legacy_id] = folder
    importer.session_tagged = []
    changed = []
    for agent_pk, folders in wanted.items():
        rows = VaultEntry.objects.filter(agent_id=agent_pk, legacy_id__in=list(folders)).values_list(
            "pk", "legacy_id", "tags"
        )
        for pk, legacy_id, tags in rows:
            remapped = []
            for tag in tags:
                match = SESSION_TAG_RE.match(tag)
                found = importer.sessions_found.get((folders[legacy_id], match["id"])) if match else None
                if match and found is None:
                    report.counts["session tags whose session is not in the export (kept as is)"] += 1
                remapped.append(tag if found is None else f"session-{found[0]}")
            remapped = list(dict.fromkeys(remapped))
            if remapped != tags:
                changed.append(VaultEntry(pk=pk, tags=remapped))
    if changed:
        VaultEntry.objects.bulk_update(changed, ["tags"], batch_size=BATCH_SIZE)
        report.counts["entries whose session tags now name the sessions stored here"] += len(changed)
