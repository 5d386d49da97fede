"""Branches and time travel: named pointers into the session's message tree."""

import logging

from django.db import transaction

from memoryproject.errors import Conflict, InvalidInput, NotFound
from sessions_app.models import Branch, Message, Session
from sessions_app.services.common import _head_preserve, _session_lock
from vault.text import CONTROL_CHARACTERS_RULE, control_characters_in, echoed

logger = logging.getLogger(__name__)


# --- branches and time travel -------------------------------------------------------------------


def _branch_name_check(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100 or "\x00" in name:
        raise InvalidInput(
            "branch name must be 1-100 characters", [{"loc": ["name"], "msg": "invalid branch name"}]
        )
    if control_characters_in(name):  # shown raw in listings and on the session page, as a path would be
        raise InvalidInput(
            f"Invalid input: name: {CONTROL_CHARACTERS_RULE}",
            [{"loc": ["name"], "msg": CONTROL_CHARACTERS_RULE}],
        )
    return name


def branch_create(*, session: Session, name: str, message: Message | None = None) -> Branch:
    """Create a branch pointing at `message` (default: the current head). It does not become active."""
    name = _branch_name_check(name)
    with transaction.atomic():
        session, active = _session_lock(session)
        if message is not None and message.session_id != session.pk:
            raise NotFound("Message not found in this session.")
        if Branch.objects.filter(session=session, name=name).exists():
            raise Conflict(f"Branch {echoed(name)} already exists.")
        head_id = message.pk if message is not None else active.head_id
        return Branch.objects.create(session=session, name=name, head_id=head_id, from_message_id=head_id)


def branch_checkout(*, session: Session, name: str) -> Branch:
    """Make a branch the active one: appends go after its head, the conversation is its path."""
    with transaction.atomic():
        session, _ = _session_lock(session)
        branch = Branch.objects.filter(session=session, name=name).first()
        if branch is None:
            raise NotFound(f"Branch {echoed(name)} not found.")
        session.active_branch = branch
        session.save(update_fields=["active_branch"])
        return branch


def message_checkout(*, session: Session, message: Message) -> tuple[Branch, Branch | None]:
    """Time travel: move the active branch's head back to `message`. Later messages are not deleted:
    if no other branch reaches them, a branch "<branch>-<old head id>" keeps them. Returns the active
    branch and that preserved branch (or None)."""
    with transaction.atomic():
        session, branch = _session_lock(session)
        if message.session_id != session.pk:
            raise NotFound("Message not found in this session.")
        preserved = _head_preserve(session, branch, new_head_id=message.pk)
        branch.head_id = message.pk
        branch.save(update_fields=["head"])
        return branch, preserved
