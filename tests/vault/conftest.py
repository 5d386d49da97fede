"""Personas for the curator pages: a curator of project A (acme), a curator of project B (globex),
and a logged-in user who is no curator."""

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from vault.models import ProjectMembership


def _curator(username, project):
    user = User.objects.create_user(username, password="pw-" + username)
    user.groups.add(Group.objects.get_or_create(name="curator")[0])
    ProjectMembership.objects.create(user=user, project=project)
    return user


@pytest.fixture
def curator_a(project):
    return _curator("alice", project)


@pytest.fixture
def curator_b(other_project):
    return _curator("bob", other_project)


@pytest.fixture
def non_curator(db):
    return User.objects.create_user("nina", password="pw-nina")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def client_a(curator_a):
    return _client(curator_a)


@pytest.fixture
def client_b(curator_b, outsider_agent):
    return _client(curator_b)


@pytest.fixture
def client_nc(non_curator):
    return _client(non_curator)


HTMX = {"HTTP_HX_REQUEST": "true"}
