"""Test data made the way the product makes it: every factory goes through the services (factory-boy
builds the arguments, the service writes the rows), so a test never holds a row no user could make."""

import factory
from django.contrib.auth.models import Group, User

from sessions_app import services as session_services
from vault import services
from vault.models import ProjectMembership, TokenScope


class ServiceFactory(factory.Factory):
    """A factory whose _create calls a service with the declared fields as keyword arguments."""

    class Meta:
        abstract = True

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return cls.service(**kwargs)


class ProjectFactory(ServiceFactory):
    class Meta:
        model = dict

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    context = ""
    service = staticmethod(services.project_create)


class AgentFactory(ServiceFactory):
    class Meta:
        model = dict

    project = factory.SubFactory(ProjectFactory)
    slug = factory.Sequence(lambda n: f"agent-{n}")
    service = staticmethod(services.agent_ensure)


class EntryFactory(ServiceFactory):
    class Meta:
        model = dict

    agent = factory.SubFactory(AgentFactory)
    category = "decisions"
    content = factory.Sequence(lambda n: f"We decided on option {n}")
    created_by = "test"
    service = staticmethod(services.entry_create)


class TokenFactory(ServiceFactory):
    """Returns the secret (what a client sends), not the row."""

    class Meta:
        model = dict

    project = factory.SubFactory(ProjectFactory)
    agent = None
    scope = TokenScope.WRITE

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return services.token_create(**kwargs)[1]


class ConversationFactory(ServiceFactory):
    """A session with its messages, appended through messages_append; returns the Session."""

    class Meta:
        model = dict

    agent = factory.SubFactory(AgentFactory)
    session_key = "chat-1"
    messages = factory.LazyFunction(list)
    changed_by = "test"

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return session_services.messages_append(**kwargs).session


class CuratorFactory(factory.Factory):
    """A user in the curator group with a membership of `project` (the curator pages' persona); the
    password is "pw-" + the username. Memberships are given by an administrator (no service writes them)."""

    class Meta:
        model = dict

    username = factory.Sequence(lambda n: f"curator-{n}")
    project = None

    @classmethod
    def _create(cls, model_class, *args, username, project=None, **kwargs):
        user = User.objects.create_user(username, password=f"pw-{username}")
        user.groups.add(Group.objects.get_or_create(name="curator")[0])
        if project is not None:
            ProjectMembership.objects.create(user=user, project=project)
        return user
