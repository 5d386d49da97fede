from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memoryproject.errors import DomainError
from vault import services
from vault.models import Project, TokenScope


class Command(BaseCommand):
    help = "Create an API token and print its secret once (only a hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--project", required=True, help="project slug (created if missing with --create)"
        )
        parser.add_argument("--agent", help="bind the token to this agent (created on first use)")
        parser.add_argument("--scope", default=TokenScope.WRITE, choices=TokenScope.values)
        parser.add_argument("--name", default="", help="a label to recognise the token by")
        parser.add_argument(
            "--create-project", action="store_true", help="create the project if it is missing"
        )

    def handle(self, *args, **options):
        try:
            with transaction.atomic():  # a refused token leaves no project or agent made for it
                project, agent, token, secret = self._create(options)
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        bound = f", agent {agent.slug}" if agent else ", all agents"
        self.stderr.write(f"Token {token.prefix}… for project {project.slug}{bound}, scope {token.scope}.")
        self.stderr.write("Copy it now: it cannot be shown again.")
        self.stdout.write(secret)

    @staticmethod
    def _create(options):
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            if not options["create_project"]:
                raise CommandError(
                    f"Project {options['project']!r} does not exist (add --create-project to create it)."
                )
            project = services.project_create(slug=options["project"])
        agent = services.agent_ensure(project=project, slug=options["agent"]) if options["agent"] else None
        token, secret = services.token_create(
            project=project, agent=agent, scope=options["scope"], name=options["name"]
        )
        return project, agent, token, secret
