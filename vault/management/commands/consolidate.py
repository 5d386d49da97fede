from django.core.management.base import BaseCommand, CommandError

from memoryproject.errors import DomainError
from vault.maintenance.consolidation import consolidation_run_all, consolidation_run_one
from vault.models import Agent, Project, RunTrigger


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
            try:
                results = [consolidation_run_one(agent=agent, trigger=RunTrigger.COMMAND)]
            except DomainError as exc:  # busy (another job), or a MEMORY.md it cannot write
                raise CommandError(f"{agent.slug}: MEMORY.md not consolidated ({exc.detail})") from None
        elif options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
            results = consolidation_run_all(project=project, trigger=RunTrigger.COMMAND)
        else:
            # Every project: two projects may each have an agent of the same name, so each line says whose.
            results = [
                {**result, "agent": f"{project.slug}/{result['agent']}"}
                for project in Project.objects.order_by("slug")
                for result in consolidation_run_all(project=project, trigger=RunTrigger.COMMAND)
            ]
        for result in results:
            state = "updated" if result["updated"] else "unchanged"
            if "error" in result:
                state = "not consolidated"
            elif result.get("refused"):
                state = "unchanged, the model's rewrite refused"
            self.stdout.write(f"{result['agent']}: MEMORY.md {state} ({result['reason']})")
            if result.get("notes_over_budget"):
                self.stdout.write(
                    f"  {len(result['notes_over_budget'])} older note(s) did not fit LLM_MAX_INPUT_TOKENS beside "
                    "the newest, so they were merged deterministically"
                )
            if "llm_error" in result:  # a configured LLM that fails must not pass unnoticed
                self.stdout.write(
                    f"  the LLM's answer was not used, so the deterministic merge ran: {result['llm_error']}"
                )
        if not results:
            self.stdout.write("No agent has daily notes in the window.")
        failed = [result["agent"] for result in results if "error" in result]
        if failed:
            raise CommandError(
                f"{len(failed)} agent{'s' if len(failed) > 1 else ''} could not be consolidated: {', '.join(failed)}"
            )
