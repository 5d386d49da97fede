"""The search page's filter form."""

from django import forms

from search.query import MAX_QUERY_CHARS
from vault.models import Category


class SearchFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=MAX_QUERY_CHARS, label="Search")
    kind = forms.ChoiceField(
        choices=[("", "Everything"), ("entries", "Entries"), ("messages", "Messages"), ("files", "Files")],
        required=False,
    )
    # "project/agent" (the page's options), as an agent slug is unique only within its project; a bare
    # slug (links from before) means that agent in every project.
    agent = forms.CharField(required=False, max_length=129)
    category = forms.ChoiceField(choices=[("", "Any category"), *Category.choices], required=False)
    status = forms.ChoiceField(
        choices=[("active", "Active"), ("archived", "Archived"), ("all", "All")], required=False
    )

    def clean_agent(self) -> tuple[str | None, str | None]:
        """(project slug, agent slug), each None when not given."""
        project, _, agent = self.cleaned_data["agent"].strip().rpartition("/")
        return project or None, agent or None
