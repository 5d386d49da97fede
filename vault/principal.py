"""Who is calling: resolved from a bearer token (agents) or a logged-in curator (pages, admin)."""

from dataclasses import dataclass, field

from memoryproject.errors import PermissionDenied
from vault.models import TokenScope

_SCOPE_RANK = {TokenScope.READ: 0, TokenScope.WRITE: 1, TokenScope.ADMIN: 2}


@dataclass(frozen=True)
class Principal:
    project_id: int
    scope: str
    label: str
    agent_id: int | None = None
    token_id: int | None = None
    # An agent token's agent as read with the token (vault.authentication's AGENT_FIELDS), so that a request
    # naming it needs no second statement; None otherwise.
    agent_row: tuple | None = field(default=None, compare=False, repr=False)
    # The agent a project-wide token's request named (by its path's or its query's `agent`), read with
    # the token when it exists (vault.authentication.token_authenticate); None otherwise.
    named_agent_row: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def is_agent_bound(self) -> bool:
        return self.agent_id is not None

    def allows(self, scope: str) -> bool:
        return _SCOPE_RANK[TokenScope(self.scope)] >= _SCOPE_RANK[TokenScope(scope)]

    def require(self, scope: str) -> None:
        """Raise PermissionDenied unless this principal holds at least `scope`."""
        if not self.allows(scope):
            raise PermissionDenied(f"This token has '{self.scope}' scope; this operation needs '{scope}'.")

    def require_project_wide(self, scope: str) -> None:
        """Project-wide operations (context edits, maintenance) need a token not bound to one agent."""
        self.require(scope)
        if self.is_agent_bound and scope != TokenScope.READ:
            raise PermissionDenied("An agent-bound token cannot change project-wide memory.")
