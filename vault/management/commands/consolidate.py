from django.core.management.base import BaseCommand, CommandError

from vault.maintenance.consolidation import consolidation_run, consolidation_run_all
from vault.models import Agent, Project


class Command(BaseCommand):
    help = "Fold the last days of daily notes into MEMORY.md now."

    def add_arguments(self, parser):
        parser.add_argument(
            "--project", help="project slug: its agents only (default: every project; with --agent: default)"
        )
        parser.add_argument("--agent", help="agent slug; default: every agent with recent daily notes")

    def handle(self, *args, **options):
        if options["agent"]:
            agent = Agent.objects.filter(slug=options["agent"], project__slug=options["project"] or "default")
            agent = agent.first()
            if agent is None:
                raise CommandError(
                    f"No agent {options['agent']!r} in project {options['project'] or 'default'!r}."
                )
            results = [consolidation_run(agent=agent)]
        elif options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
            results = consolidation_run_all(project=project)
        else:
            results = consolidation_run_all()
        for result in results:
            state = "updated" if result["updated"] else "unchanged"
            self.stdout.write(f"{result['agent']}: MEMORY.md {state} ({result['reason']})")
        if not results:
            self.stdout.write("No agent has daily notes in the window.")
