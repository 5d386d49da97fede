import pytest
from django.utils import timezone

from sessions_app.models import Message, Session
from vault import services


@pytest.fixture
def make_entry():
    def make(agent, content, category="decisions", **kwargs):
        return services.entry_create(
            agent=agent, category=category, content=content, created_by="test", dedupe=False, **kwargs
        )

    return make


@pytest.fixture
def make_message():
    def make(agent, text, role="user", **kwargs):
        session, _ = Session.objects.get_or_create(
            project=agent.project, agent=agent, external_id="chat-1", defaults={"model_id": "m"}
        )
        return Message.objects.create(
            project=agent.project,
            agent=agent,
            session=session,
            role=role,
            text=text,
            created_at=kwargs.pop("created_at", timezone.now()),
            **kwargs,
        )

    return make
