from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Message, Session
from tests.fake_llm import fake_llm  # noqa: F401
from vault import services as vault_services


def session_make(agent, texts, *, start=None, external_id="chat-1"):
    """A session whose messages alternate user / assistant unless a text starts with 'role:'. Given a
    `start`, the session was last active at its last message, as appends leave it."""
    quiet = start is not None
    start = start or timezone.now() - timedelta(hours=1)
    session = Session.objects.create(project_id=agent.project_id, agent=agent, external_id=external_id)
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        if ":" in text[:10] and text.split(":", 1)[0] in ("user", "assistant", "tool", "system"):
            role, text = text.split(":", 1)
        Message.objects.create(
            project_id=agent.project_id,
            agent=agent,
            session=session,
            role=role,
            text=text,
            created_at=start + timedelta(seconds=i),
        )
    if quiet and texts:
        session.last_activity_at = start + timedelta(seconds=len(texts) - 1)
        Session.objects.filter(pk=session.pk).update(last_activity_at=session.last_activity_at)
    return session


@pytest.fixture
def make_session():
    return session_make


@pytest.fixture
def two_days_of_notes(agent_a):
    """Agent A with a daily note today and two days ago, each noting the same fact: what consolidation
    reads."""
    for days_ago in (0, 2):
        vault_services.daily_note_append(
            agent=agent_a,
            when=timezone.now() - timedelta(days=days_ago),
            text="\n## 10:00\n- Deploys happen on Fridays\n",
            changed_by="t",
        )
    return agent_a
