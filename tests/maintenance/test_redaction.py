import time

import pytest
from django.conf import settings as django_settings

from vault import services
from vault.models import VaultEntry, WorkspaceFile
from vault.redaction import BUILTIN_PATTERNS, redact


@pytest.mark.parametrize(
    "text, expected",
    [
        ("mail bob.smith@example.com now", "mail [REDACTED] now"),
        ("key sk-proj-abcdefghijklmnop1234 here", "key [REDACTED] here"),
        ("gh token ghp_abcdefghijklmnopqrstuvwxyz012345", "gh token [REDACTED]"),
        ("aws AKIAABCDEFGHIJKLMNOP", "aws [REDACTED]"),
        ("password: hunter2, then", "password: [REDACTED], then"),
        ("My password is s3cret!", "My password is [REDACTED]"),
        ('api_key="xyz123"', 'api_key="[REDACTED]"'),
        ("opaque AbCdEfGh1234567890AbCdEfGh12345678 blob", "opaque [REDACTED] blob"),
        # Left alone: commit hashes, ordinary words about passwords.
        (
            "commit 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a",
            "commit 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a",
        ),
        ("the password reset flow", "the password reset flow"),
    ],
)
def test_default_patterns(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "sk-" * 20_000,  # every "sk" starts a key that never gets its 16 letters
        "a." * 30_000 + "@",  # every letter starts an address that never reaches its domain
        "x@" + "a." * 30_000,  # and a domain that never gets its last label
    ],
)
def test_it_redacts_a_long_run_of_near_misses_in_linear_time(text):
    """Anyone with a write token sends up to 512 KiB per message: quadratic patterns held a worker for
    seconds per 60 KB (this text), minutes per message."""
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize(
    "text",
    [
        "key sk-proj-" + "Ab1_cD2-eF3gH4iJ5kL6mN7oP8" * 6 + " end",  # 164 characters, 13 dashed parts
        "mail " + "a" * 64 + "@" + "b" * 63 + ".example.com end",
    ],
)
def test_it_still_redacts_long_keys_and_addresses(text):
    assert redact(text).split() == [text.split()[0], "[REDACTED]", "end"]


def test_it_redacts_a_run_of_private_key_headers_in_linear_time(settings):
    settings.MEMORY_REDACTION_PATTERNS = ["private_key"]
    started = time.perf_counter()
    redact("-----BEGIN A PRIVATE KEY-----" * 4_000 + "x")
    assert time.perf_counter() - started < 1
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    assert redact(f"{key}\n{key} end") == "[REDACTED]\n[REDACTED] end"


def test_the_settings_list_of_pattern_names_matches_the_module():
    from memoryproject import settings as project_settings

    assert set(project_settings._REDACTION_NAMES) == set(BUILTIN_PATTERNS)
    assert django_settings.MEMORY_REDACTION_PATTERNS == ["email", "api_key", "password"]


def test_an_extra_regex_can_be_configured(settings):
    settings.MEMORY_REDACTION_EXTRA_REGEX = r"\bCUST-\d{6}\b"
    assert redact("customer CUST-123456") == "customer [REDACTED]"


@pytest.mark.django_db
def test_api_writes_are_redacted(api, token_a, agent_a):
    response = api.post("/agents/agent-a/entries", {"category": "lessons", "content": "Ask ops@acme.io #ops"},
                        token=token_a)  # fmt: skip
    assert response.status_code == 201 and response.json()["content"] == "Ask [REDACTED] #ops"
    entry_id = response.json()["id"]
    patched = api.patch(f"/entries/{entry_id}", {"content": "password: swordfish"}, token=token_a).json()
    assert patched["content"] == "password: [REDACTED]"
    assert "swordfish" not in str(list(VaultEntry.objects.values_list("content", flat=True)))


@pytest.mark.django_db
def test_import_and_file_writes_are_redacted(agent_a):
    entry = services.entry_create(agent=agent_a, category="projects", content="Owner: jane@acme.io",
                                  source="import", legacy_id="1")  # fmt: skip
    assert entry.content == "Owner: [REDACTED]"
    file, _ = services.file_write(
        agent=agent_a, path="PROFILE.md", content="email jane@acme.io", changed_by="t"
    )
    assert file.content == "email [REDACTED]"
    appended = services.file_append(agent=agent_a, path="notes.md", text="key sk-live-0123456789abcdefXYZ",
                                    changed_by="t")  # fmt: skip
    assert appended.content == "key [REDACTED]"
    assert WorkspaceFile.objects.filter(content__contains="jane@").count() == 0


def test_the_project_context_is_redacted_before_it_is_stored_and_injected(api, admin_token, token_a, project):
    """The project context, injected into every agent's prompt, was the one text stored as sent on a
    redacting project: a password put there reached every new session."""
    response = api.put("/project/context", {"content": "Deploy with password: swordfish"}, token=admin_token)
    assert response.status_code == 200 and response.json()["content"] == "Deploy with password: [REDACTED]"
    text = api.post("/agents/agent-a/context", {"command": "deploy"}, token=token_a).json()["text"]
    assert "Deploy with password: [REDACTED]" in text and "swordfish" not in text
    project.redaction_enabled = False
    project.save(update_fields=["redaction_enabled"])
    response = api.put("/project/context", {"content": "Deploy with password: swordfish"}, token=admin_token)
    assert response.json()["content"] == "Deploy with password: swordfish"


@pytest.mark.django_db
def test_a_project_can_switch_redaction_off(agent_a):
    agent_a.project.redaction_enabled = False
    agent_a.project.save(update_fields=["redaction_enabled"])
    entry = services.entry_create(agent=agent_a, category="lessons", content="Write to jane@acme.io")
    assert entry.content == "Write to jane@acme.io"


def _every_pattern_applied(text: str) -> str:
    """The reference: every configured pattern run over the text, none skipped."""
    import re

    from vault.redaction import _replace

    for source in [s for name in BUILTIN_PATTERNS for s in BUILTIN_PATTERNS[name]]:
        text = re.compile(source, re.DOTALL).sub(_replace, text)
    return text


@pytest.mark.parametrize(
    "text",
    [
        "plain chat about the weekend, nothing secret here",
        "mail bob.smith@example.com and ANA@ACME.IO",
        "key sk_live_0123456789abcdefXYZ and rk-abcdefghijklmnopqrst",
        "gho_abcdefghijklmnopqrstuvwxyz xoxb-1234567890-abcdef AKIAABCDEFGHIJKLMNOP",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz012345 mem_abcdefghijklmnopqrstuvwxyz",
        "opaque AbCdEfGh1234567890AbCdEfGh12345678 blob",
        "PASSWORD=abc PassPhrase: long one, pwd: x, senha: segredo",
        # Under IGNORECASE, 'ſ' matches 's', 'ı' and 'İ' match 'i', the Kelvin sign matches 'k'.
        "pa\u017f\u017fword: hunter2",
        "AP\u0131_KEY: zz",
        "acce\u017f\u017f_to\u212aen = abc",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
        "client_secret: 'zzz'; secret = yyy",
        # Patterns that run and change nothing, then ones that redact: the hints read after each change.
        "@alice the api client, see https://example.com/docs/ledger/replication-lag; password: hunter2",
        "mail bob@example.com, password: hunter2 and api_key=zz; senha: não, AbCdEfGh1234567890AbCdEfGh12345678",
    ],
)
def test_skipping_a_pattern_by_its_hints_never_changes_the_result(settings, text):
    settings.MEMORY_REDACTION_PATTERNS = list(BUILTIN_PATTERNS)
    assert redact(text) == _every_pattern_applied(text)
    if text.startswith("plain"):
        assert redact(text) == text
    else:
        assert "[REDACTED]" in redact(text)


def test_every_builtin_pattern_but_the_generic_key_rule_can_be_skipped(settings):
    from vault.redaction import _GENERIC_KEY, _configured

    settings.MEMORY_REDACTION_PATTERNS = list(BUILTIN_PATTERNS)
    needs = {pattern.pattern: needed for pattern, needed in _configured()}
    assert needs.pop(_GENERIC_KEY) is None
    assert all(needs.values()), needs
    assert needs[BUILTIN_PATTERNS["password"][0]] == ("passphrase", "passwd", "password", "pwd", "senha")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (r"\bCUST-\d*", "Ask [REDACTED] at port 5432 #ops"),
        # Zero-width matches (a word boundary, a look-ahead): nothing to replace there.
        (r"\b(?:CUST-\d+)?", "Ask [REDACTED] at port 5432 #ops"),
        (r"(?=port)", "Ask CUST-123456 at port 5432 #ops"),
    ],
)
def test_an_extra_regex_matching_nothing_somewhere_changes_nothing_there(
    settings, api, token_a, agent_a, regex, expected
):
    """An extra regex that can match an empty text put [REDACTED] between words, or between every
    character, of every entry, message and file written: memory rewritten beyond reading."""
    settings.MEMORY_REDACTION_EXTRA_REGEX = regex
    response = api.post("/agents/agent-a/entries", {"category": "lessons", "content": "Ask CUST-123456 at port 5432 #ops"},
                        token=token_a)  # fmt: skip
    assert response.status_code == 201 and response.json()["content"] == expected


def test_the_text_is_lower_cased_once_when_no_pattern_changes_it(settings, monkeypatch):
    """Each pattern that ran (an '@' for the address rule, a long URL for the generic key rule, 'api'
    and 'password' for the key and password rules) had the next one lower-case the whole text again:
    four passes over a 10 KB chat turn where one does."""
    from vault import redaction

    settings.MEMORY_REDACTION_PATTERNS = list(BUILTIN_PATTERNS)
    calls = []
    monkeypatch.setattr(redaction, "haystack", lambda text: calls.append(text) or text.lower())
    turn = (
        "@alice the api client retries on 503, see https://example.com/docs/ledger/replication-lag-notes "
        "and the @dataclass in ledger/models.py; the password reset flow is unchanged. "
    ) * 60
    assert redact(turn) == turn
    assert len(calls) == 1
    calls.clear()
    assert (
        redact("mail bob@example.com, then password: hunter2") == "mail [REDACTED], then password: [REDACTED]"
    )
    # Again after each replacement (a later rule reads the hints of the changed text), and only then.
    assert calls == [
        "mail bob@example.com, then password: hunter2",
        "mail [REDACTED], then password: hunter2",
        "mail [REDACTED], then password: [REDACTED]",
    ]
