"""Dates an import reads: parsed right, or counted and shown in the summary (clamped, refused, unreadable),
never changed silently."""

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Message
from vault import services
from vault.models import VaultEntry
from vault.transfer.common import date_parse

NOW = datetime(2026, 3, 18, 12, 0, tzinfo=UTC)


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (NOW.timestamp() - 86400,) * 2)  # written before the (travelled) clock
    return path


def entry(marker: str, header: str, text: str) -> str:
    return f"<!-- id:{marker} -->\n## {header}\n{text}\n---\n\n"


def import_command(path: Path, *options: str) -> str:
    out = io.StringIO()
    call_command("import_memory_dir", str(path), "--project", "target", *options, stdout=out)
    return out.getvalue()


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / ".memory"
    write(
        root,
        "dev/decisions.md",
        entry("a1", "2999-01-01T00:00:00Z", "From the future.")
        + entry("a2", "2030-06-01", "Also to come.")
        + entry("a3", "2026-02-30T10:00", "No such day.")
        + entry("a4", "01/02/2026", "Month or day first?")
        + entry("a5", "2026-03-01T10:00:00+02:00", "With an offset."),
    )
    write(
        root,
        "conversations/dev.json",
        json.dumps(
            {
                "agentId": "dev",
                "savedAt": "2999-05-05T00:00:00Z",
                "messages": [{"role": "user", "text": "hi"}],
            }
        ),
    )
    return root


@time_machine.travel(NOW, tick=False)
@pytest.mark.parametrize("dry_run", [False, True])
def test_the_command_summary_counts_clamped_and_unreadable_dates_with_examples(vault, target, dry_run):
    out = import_command(vault.parent, *(["--dry-run"] if dry_run else []))
    summary = out[out.index("Import summary:" if not dry_run else "Dry run:") :]
    assert "Dates:" in summary
    assert "dates to come stored as the import time: 3" in summary
    assert "decisions.md (id a1): '2999-01-01T00:00:00Z'" in summary
    assert "2999-05-05T00:00:00Z" in summary and "dev.json" in summary
    assert "unreadable dates (another date used): 2" in summary
    assert "'2026-02-30T10:00'" in summary and "'01/02/2026'" in summary


@time_machine.travel(NOW, tick=False)
def test_a_clean_import_says_nothing_of_dates(tmp_path, target):
    write(tmp_path / ".memory", "dev/decisions.md", entry("b1", "2026-03-01T10:00:00+02:00", "Fine."))
    out = import_command(tmp_path)
    assert "Dates:" not in out
    assert VaultEntry.objects.get(legacy_id="b1").created_at == datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@time_machine.travel(NOW, tick=False)
def test_a_leap_second_is_read_not_dropped(tmp_path, target):
    write(tmp_path / ".memory", "dev/decisions.md", entry("c1", "2016-12-31T23:59:60Z", "Leap."))
    out = import_command(tmp_path)
    assert "unreadable" not in out
    assert VaultEntry.objects.get(legacy_id="c1").created_at == datetime(2017, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2016-12-31T23:59:60Z", datetime(2017, 1, 1, tzinfo=UTC)),
        ("2016-12-31T23:59:60.5+00:00", datetime(2017, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2026-03-01T10:00+02:00", datetime(2026, 3, 1, 8, tzinfo=UTC)),
        ("1700000000", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("1700000000000", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        (1700000000000, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        (2026, None),
        (0, None),
        ("2026-02-30", None),
        ("01/02/2026", None),
        ("2026-03-01T10:00:61Z", None),
        ("2026-03-01T23:58:60Z", None),
    ],
)
@time_machine.travel(NOW, tick=False)
def test_date_parse_reads_each_form_or_refuses_it(value, expected):
    assert date_parse(value) == expected


@time_machine.travel(NOW, tick=False)
def test_a_year_or_zero_as_an_epoch_number_is_reported_not_read_as_1970(tmp_path, target):
    conversation = {
        "agentId": "dev",
        "savedAt": 0,
        "messages": [{"id": "m1", "role": "user", "text": "hi", "timestamp": 2026}],
    }
    write(tmp_path / ".memory", "conversations/dev.json", json.dumps(conversation))
    out = import_command(tmp_path)
    assert "unreadable dates (another date used): 2" in out
    assert "dev.json: 0" in out and "dev.json: 2026" in out
    assert Message.objects.get().created_at.year == 2026


def test_a_review_items_date_to_come_is_shown_as_its_review_files(
    tmp_path, project, agent_a, agent_b, target
):
    """Review items are stored after every file is read: their dates were shown as the last file's."""
    services.review_policy_set(project=project, category="", hold_agent_writes=True, hold_extracted=False)
    services.entry_create(agent=agent_a, category="decisions", content="Held for review")
    services.entry_create(agent=agent_b, category="lessons", content="Another agent's, read after")
    out = tmp_path / "out"
    call_command("export_memory_dir", str(out), "--project", project.slug, stdout=io.StringIO())
    review = out / agent_a.slug / ".review.json"
    data = json.loads(review.read_text())
    data["items"][0]["created_at"] = "2999-01-01T00:00:00Z"
    review.write_text(json.dumps(data))
    out_text = import_command(out)
    assert f"{review}: '2999-01-01T00:00:00Z'" in out_text, out_text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-03-01 10:00 Europe/Lisbon", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        ("2025-07-01T10:00:30 Europe/Lisbon", datetime(2025, 7, 1, 9, 0, 30, tzinfo=UTC)),
        ("2026-03-01 10:00 PST", datetime(2026, 3, 1, 18, tzinfo=UTC)),
        ("2026-03-01 10:00 pdt", datetime(2026, 3, 1, 17, tzinfo=UTC)),
        ("Sun, 01 Mar 2026 10:00:00 +0000", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        ("01 Mar 2026 10:00:00 -0530", datetime(2026, 3, 1, 15, 30, tzinfo=UTC)),
        ("Sun, 01 Mar 2026 10:00:00 GMT", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        ("2026-03-01 10:00 IST", None),  # India's, Ireland's or Israel's: not guessed
        ("2026-03-01 10:00 Mars/Olympus", None),
        ("2026-03-01 10:00 ../../etc/passwd", None),
        ("Sun, 01 Mar 2026 10:00:00 XYZ", None),  # email.utils alone reads an unknown zone as UTC
        ("Sun, 01 Mar 2026 10:00:00", None),
        ("Sun, 31 Feb 2026 10:00:00 +0000", None),
    ],
)
@time_machine.travel(NOW, tick=False)
def test_date_parse_reads_named_zones_and_rfc_2822_dates(value, expected):
    assert date_parse(value) == expected


@time_machine.travel(NOW, tick=False)
def test_an_import_reads_dates_with_a_zone_name_or_in_rfc_2822(tmp_path, target):
    """A header or a message date with a zone's name, or as mail writes dates, was counted unreadable and
    replaced by the file's date."""
    write(
        tmp_path / ".memory",
        "dev/decisions.md",
        entry("z1", "2026-03-01 10:00 Europe/Lisbon", "Lisbon.")
        + entry("z2", "Sun, 01 Mar 2026 10:00:00 +0000 · #mail", "Mail."),
    )
    conversation = {
        "agentId": "dev",
        "savedAt": "Sun, 01 Mar 2026 12:00:00 GMT",
        "messages": [{"id": "m1", "role": "user", "text": "hi", "timestamp": "2026-03-01 10:00 PST"}],
    }
    write(tmp_path / ".memory", "conversations/dev.json", json.dumps(conversation))
    out = import_command(tmp_path)
    assert "Dates:" not in out, out
    assert VaultEntry.objects.get(legacy_id="z1").created_at == datetime(2026, 3, 1, 10, tzinfo=UTC)
    mail = VaultEntry.objects.get(legacy_id="z2")
    assert mail.created_at == datetime(2026, 3, 1, 10, tzinfo=UTC) and mail.tags == ["mail"]
    assert Message.objects.get().created_at == datetime(2026, 3, 1, 18, tzinfo=UTC)


@time_machine.travel(NOW, tick=False)
@pytest.mark.parametrize("command", ["import_memory_dir", "import_conversations"])
def test_strict_refuses_an_import_that_did_not_keep_a_date(tmp_path, target, command):
    """--strict promises to refuse doubtful input, yet a date to come stored as the import time (or an
    unreadable one replaced) exited 0 with the problems list empty."""
    conversation = {
        "agentId": "dev",
        "savedAt": "2999-05-05T00:00:00Z",
        "messages": [{"role": "user", "text": "We decided to use SSE for streaming."}],
    }
    source = write(tmp_path / ".memory", "conversations/dev.json", json.dumps(conversation)).parent.parent
    out = io.StringIO()
    with pytest.raises(CommandError) as failure:
        call_command(command, str(source), "--project", "target", "--strict", stdout=out)
    assert failure.value.returncode == 1
    assert str(failure.value).startswith(
        "--strict: 0 problem(s) reported, 1 date(s) not kept as written (listed above); the rest was imported."
    ), failure.value
    assert "dates to come stored as the import time: 1" in out.getvalue()
    call_command(command, str(source), "--project", "target", stdout=io.StringIO())  # no --strict: exits 0
