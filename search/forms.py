"""The search page's filter form."""

from django import forms

from vault.models import Category


class SearchFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=500, label="Search")
    kind = forms.ChoiceField(
        choices=[("", "Everything"), ("entries", "Entries"), ("messages", "Messages"), ("files", "Files")],
        required=False,
    )
    agent = forms.CharField(required=False, max_length=64)
    category = forms.ChoiceField(choices=[("", "Any category"), *Category.choices], required=False)
    status = forms.ChoiceField(
        choices=[("active", "Active"), ("archived", "Archived"), ("all", "All")], required=False
    )
