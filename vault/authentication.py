"""Who a bearer secret is: the token's principal, read with its agent in one statement."""

import re
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from memoryproject.prepared import prepared_cursor
from vault.models import Agent, ApiToken
from vault.principal import Principal
from vault.tokens import TOKEN_PREFIX, token_hash


def token_authenticate(secret: str, agent_slug: str | None = None) -> Principal | None:
    """The principal for a bearer secret, or None when it is unknown or revoked.

    `agent_slug`: the agent the request names, if any. A project-wide token's statement also reads
    that agent (Principal.named_agent_row), so that agent_get_for_principal needs no statement of its
    own for it (0.2 ms of CPU a request: the web process's psycopg and the database's round trip).

    last_used_at is written at most once a minute per token, so a busy agent does not turn every
    read into a write on the same row.
    """
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    # Every API and MCP request runs this: one statement by hand, as the ORM's compiling of the same
    # query took 0.65 ms against 0.17 ms for the statement itself; prepared, PostgreSQL plans it once.
    # An agent token's agent is read with it: most requests name that agent (agent_get_for_principal).
    named = agent_slug is not None and _SLUG.fullmatch(agent_slug) is not None
    with prepared_cursor() as cursor:
        if named:
            cursor.execute(_NAMED_TOKEN_STATEMENT, [agent_slug, token_hash(secret)])
        else:
            cursor.execute(_TOKEN_STATEMENT, [token_hash(secret)])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, project_id, agent_id, scope, prefix, last_used_at = row[:6]
    fields = len(AGENT_FIELDS)
    agent_row = row[6 : 6 + fields] if row[6] is not None else None
    named_row = row[6 + fields :] if named and row[6 + fields] is not None else None
    now = timezone.now()
    stale = now - timedelta(seconds=settings.MEMORY_TOKEN_LAST_USED_RESOLUTION_SECONDS)
    if last_used_at is None or last_used_at < stale:
        ApiToken.objects.filter(pk=token_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale)
        ).update(last_used_at=now)
    return Principal(
        project_id=project_id,
        agent_id=agent_id,
        scope=scope,
        token_id=token_id,
        label=f"token:{prefix}",
        agent_row=agent_row,
        named_agent_row=named_row,
    )


# The agent columns the token statement reads, in this order: vault.selectors builds the Agent from them.
AGENT_FIELDS = [field.attname for field in Agent._meta.concrete_fields]
AGENT_SLUG_INDEX = AGENT_FIELDS.index("slug")
# What can be an agent's slug (openapi's AGENT_PATH_SCHEMA allows less): anything else is not looked up.
_SLUG = re.compile(r"[a-z0-9._-]{1,64}")
# token_authenticate's statements, their text built once rather than on every request; the second also
# reads the agent a project-wide token's request names.
_TOKEN_COLUMNS = "t.id, t.project_id, t.agent_id, t.scope, t.prefix, t.last_used_at, " + ", ".join(
    f"a.{name}" for name in AGENT_FIELDS
)
_TOKEN_FROM = (
    f"FROM {ApiToken._meta.db_table} t "
    f"LEFT JOIN {Agent._meta.db_table} a ON a.id = t.agent_id AND a.project_id = t.project_id"
)
_TOKEN_WHERE = "WHERE t.token_hash = %s AND t.revoked_at IS NULL"
_TOKEN_STATEMENT = f"SELECT {_TOKEN_COLUMNS} {_TOKEN_FROM} {_TOKEN_WHERE}"
_NAMED_TOKEN_STATEMENT = (
    f"SELECT {_TOKEN_COLUMNS}, {', '.join(f'n.{name}' for name in AGENT_FIELDS)} {_TOKEN_FROM} "
    f"LEFT JOIN {Agent._meta.db_table} n ON t.agent_id IS NULL AND n.project_id = t.project_id"
    f" AND n.slug = %s {_TOKEN_WHERE}"
)
