"""What an export of this server says about review and its agents, read back: the project's review
policies and the agents' display names (`.export.json`), and why entries wait for review (each agent's
`.review.json`: its entries' review items, naming entries by their ids in the export). Review items are
linked once the entries are stored, to the entries the import stored under those ids."""

from pathlib import Path

from django.db.models import Q

from memoryproject.errors import DomainError
from vault import services
from vault.models import Agent, Category, ReviewItem, ReviewKind, ReviewPolicy
from vault.text import text_prefix_chars
from vault.transfer.common import _read_json, date_parse, dates_where
from vault.transfer.writer import Importer

_POLICY_FLAGS = ("hold_agent_writes", "hold_extracted")


def export_manifest_adopt(importer: Importer, manifest, *, where: Path) -> None:
    """What `.export.json` says of the exported project: its redaction setting, its review policies and its
    agents' display names (used as each agent's folder is imported). An earlier export has only some."""
    if not isinstance(manifest, dict):
        return
    if manifest.get("redaction_enabled") is False:
        importer.redaction_off_adopt(where=where)
    if isinstance(manifest.get("review_policies"), list):
        _review_policies_adopt(importer, manifest["review_policies"], where=where)
    if isinstance(manifest.get("agents"), dict):
        importer.agent_names = {
            folder: about["name"]
            for folder, about in manifest["agents"].items()
            if isinstance(about, dict) and isinstance(about.get("name"), str)
        }


def _holds(flags: tuple[bool, bool]) -> str:
    held = [what for what, on in zip(("agent writes", "extracted entries"), flags, strict=True) if on]
    return " and ".join(held) or "nothing"


def _review_policies_adopt(importer: Importer, policies: list, *, where: Path) -> None:
    """A policy the project lacks is created; one it has with other settings is kept, and reported."""
    report = importer.report
    stored = {policy.category: policy for policy in ReviewPolicy.objects.filter(project=importer.project)}
    for raw in policies:
        category = raw.get("category", "") if isinstance(raw, dict) else None
        if category not in ("", *Category.values) or not all(
            isinstance(raw.get(f), bool) for f in _POLICY_FLAGS
        ):
            report.problem(where, f"review policy {raw!r} is not one this version reads; skipped")
            continue
        wanted = tuple(raw[flag] for flag in _POLICY_FLAGS)
        policy = stored.get(category)
        scope = f"{category} entries" if category else "every category"
        if policy is None:
            services.review_policy_set(
                project=importer.project, category=category, **dict(zip(_POLICY_FLAGS, wanted, strict=True))
            )
            report.counts["review policies created"] += 1
        elif tuple(getattr(policy, flag) for flag in _POLICY_FLAGS) == wanted:
            report.counts["review policies unchanged"] += 1
        else:
            here = tuple(getattr(policy, flag) for flag in _POLICY_FLAGS)
            report.problem(
                where,
                f"the exported project's review policy for {scope} holds {_holds(wanted)} for review; this "
                f"project's, holding {_holds(here)}, is kept",
            )


def agent_name_adopt(importer: Importer, agent: Agent | None, directory: Path) -> None:
    """The display name the export gives the agent of `directory`, taken by an agent that has none of its
    own (its name is its id); one named otherwise here keeps its name, counted."""
    name = importer.agent_names.get(directory.name, "").strip()
    if agent is None or not name or name in (directory.name, agent.name):
        return
    if agent.name not in ("", agent.slug):
        importer.report.counts["agent names kept (named otherwise here)"] += 1
        return
    try:
        services.agent_name_set(agent=agent, name=name)
    except DomainError as exc:
        importer.report.problem(directory, f"display name not taken: {exc.detail}")
        return
    importer.report.counts["agent names set"] += 1


def review_file_import(importer: Importer, agent: Agent, path: Path) -> None:
    """`{agent}/.review.json`: its items wait until the entries are stored (`review_items_link`)."""
    data = _read_json(path, importer.report)
    if data is None:
        return
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        importer.report.problem(path, "has no 'items' list; skipped")
        return
    importer.review_items.extend((agent, item, str(path)) for item in data["items"])


def _text(raw: dict, key: str, limit: int) -> str:
    value = raw.get(key)
    return text_prefix_chars(value.replace("\x00", ""), limit) if isinstance(value, str) else ""


def review_items_link(importer: Importer) -> None:
    """Store the review items read from the export, each on the entry the import stored under its id (and
    the other entry it names, in its agent after --agent-map), keeping its dates and resolution. An item
    already there (same entry, kind, other entry and detail) is skipped; so is one whose entry is not
    stored under its id (matched to a stored entry by content, or skipped), counted."""
    report = importer.report
    importer.flush()
    for agent, raw, where in importer.review_items:
        dates_where(where)  # read here, after every file: its dates are its file's
        if (
            not isinstance(raw, dict)
            or raw.get("kind") not in ReviewKind.values
            or not isinstance(raw.get("entry"), str)
        ):
            report.problem(where, f"review item {str(raw)[:200]} is not one this version reads; skipped")
            continue
        entry_pk = importer.entry_pks(agent.pk, [raw["entry"]], Path(where).parent.name).get(raw["entry"])
        if entry_pk is None:
            report.counts["review items skipped (entry not stored under its id)"] += 1
            continue
        other_pk = None
        other = raw.get("other")
        if (
            isinstance(other, dict)
            and isinstance(other.get("agent"), str)
            and isinstance(other.get("id"), str)
        ):
            slug = importer.agent_slug(other["agent"])
            other_agent = importer.agent_known(slug)
            if other_agent is not None:
                other_pk = importer.entry_pks(other_agent.pk, [other["id"]], other["agent"]).get(other["id"])
            if other_pk is None:
                report.problem(
                    where,
                    f"review item of entry {raw['entry']}: entry {other['id']} of {other['agent']}, "
                    "which it concerns, is not here; imported without it",
                )
        detail = _text(raw, "detail", 2000)
        same = ReviewItem.objects.filter(entry_id=entry_pk, kind=raw["kind"], detail=detail)
        if same.filter(Q(other_entry_id=other_pk) if other_pk else Q()).exists():
            report.counts["review items already imported (skipped)"] += 1
            continue
        item = ReviewItem.objects.create(
            entry_id=entry_pk, kind=raw["kind"], other_entry_id=other_pk, detail=detail
        )
        ReviewItem.objects.filter(pk=item.pk).update(
            created_at=date_parse(raw.get("created_at")) or item.created_at,
            resolved_at=date_parse(raw.get("resolved_at")),
            resolution=_text(raw, "resolution", 10_000),
            resolved_by=_text(raw, "resolved_by", 200),
        )
        report.counts["review items imported"] += 1
    importer.review_items = []
