"""Run the MCP server on stdin/stdout for clients that launch a local process."""

import os

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memoryproject.errors import DomainError
from memoryproject.mcp.caller import Caller, stdio_caller_set
from memoryproject.mcp.server import mcp_server
from memoryproject.mcp.stdio import serve_stdio, stdout_restore
from vault import selectors, services
from vault.authentication import token_authenticate
from vault.models import Agent, Project, TokenScope
from vault.principal import Principal


class Command(BaseCommand):
    help = (
        "Serve the memory over MCP on stdin/stdout. Acts as --agent in --project (write scope), or as the "
        "token given by --token or MEMORY_TOKEN. Logs go to stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("--agent", help="the agent to act as (created on first use without a token)")
        parser.add_argument("--project", help="project slug (default: the default project)")
        parser.add_argument("--token", help="an API token (default: env MEMORY_TOKEN)")

    def handle(self, *args, **options):
        try:
            caller = self._caller(options)
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        stdio_caller_set(caller)
        # MCP clients start this process with their own environment: one that lacks the server's
        # DATABASE_URL (or MEMORY_DATA_DIR) would read and write another database, silently. Say which.
        self.stderr.write(
            f"memory MCP over stdio: {self._acting_as(caller)}; database: {_database_describe()}"
        )
        server = mcp_server()
        stdout_restore()
        anyio.run(serve_stdio, server)

    @staticmethod
    def _acting_as(caller: Caller) -> str:
        principal = caller.principal
        project = Project.objects.filter(pk=principal.project_id).values_list("slug", flat=True).first()
        agent = caller.default_agent
        if principal.agent_id is not None:
            agent = Agent.objects.filter(pk=principal.agent_id).values_list("slug", flat=True).first()
        return f"project {project!r}, " + (f"agent {agent!r}" if agent else "no default agent")

    def _caller(self, options) -> Caller:
        secret = options["token"] or os.environ.get("MEMORY_TOKEN", "")
        if secret:
            principal = token_authenticate(secret)
            if principal is None:
                raise CommandError("Unknown or revoked token (--token / MEMORY_TOKEN).")
            if options["project"] and options["project"] != selectors.project_for_principal(principal).slug:
                raise CommandError("The token belongs to another project than --project.")
            if principal.agent_id is not None and options["agent"]:
                own = Agent.objects.filter(pk=principal.agent_id).values_list("slug", flat=True).first()
                if options["agent"] != own:
                    raise CommandError(
                        f"The token is agent {own!r}'s and can reach no other agent: drop --agent "
                        f"{options['agent']!r}, or use a project token (--agent then names the default agent)."
                    )
            return Caller(principal=principal, default_agent=options["agent"], secret=secret)
        if not options["agent"]:
            raise CommandError(
                "Give --agent AGENT (optionally --project P), or a token: --token / MEMORY_TOKEN."
            )
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
        else:
            project, _ = services.project_ensure_default()
        agent = services.agent_ensure(project=project, slug=options["agent"])
        principal = Principal(
            project_id=project.pk, agent_id=agent.pk, scope=TokenScope.WRITE, label=f"mcp-stdio:{agent.slug}"
        )
        return Caller(principal=principal)


def _database_describe() -> str:
    if settings.EMBEDDED_DATABASE:
        return f"the embedded PostgreSQL under {settings.MEMORY_DATA_DIR / 'pg'}"
    db = settings.DATABASES["default"]
    return f"{db.get('HOST') or 'local socket'}:{db.get('PORT') or 5432}/{db['NAME']} (DATABASE_URL)"
