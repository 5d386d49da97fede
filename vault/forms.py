"""Forms of the curator pages. They parse input only; the services check and store it."""

from datetime import datetime

from django import forms
from django.utils.dateparse import parse_datetime

from vault.models import REJECT_REASON_MAX_CHARS, Category, EntrySource, EntryStatus, TokenScope


class BrowserTextField(forms.CharField):
    """A textarea's text with its line breaks as \n: a browser submits every line break of a textarea
    as CRLF, so text stored with \n came back changed, and the agents' edits by exact text then failed.
    Text written through the API is not parsed here and keeps its own line endings."""

    def to_python(self, value):
        value = super().to_python(value)
        return value.replace("\r\n", "\n").replace("\r", "\n")


class EntryForm(forms.Form):
    category = forms.ChoiceField(choices=Category.choices)
    content = BrowserTextField(widget=forms.Textarea(attrs={"rows": 8}), strip=False)
    tags = forms.CharField(
        required=False,
        help_text="Separated by spaces or commas. #hashtags in the content are added too.",
    )
    importance = forms.FloatField(
        min_value=0.0, max_value=1.0, initial=0.5, widget=forms.NumberInput(attrs={"step": "0.05"})
    )
    status = forms.ChoiceField(choices=EntryStatus.choices, initial=EntryStatus.ACTIVE)

    @classmethod
    def for_entry(cls, entry, **kwargs):
        return cls(
            initial={
                "category": entry.category,
                "content": entry.content,
                "tags": " ".join(entry.tags),
                "importance": entry.importance,
                "status": entry.status,
            },
            **kwargs,
        )

    def clean_tags(self) -> list[str]:
        return [tag for tag in self.cleaned_data["tags"].replace(",", " ").split() if tag]


class EntryEditForm(EntryForm):
    """The entry form of the edit page, carrying the entry's `updated_at` as it was when the form was
    opened, so that a save cannot silently replace an edit made since (entry_curator_update)."""

    seen_updated_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)

    @classmethod
    def for_entry(cls, entry, **kwargs):
        form = super().for_entry(entry, **kwargs)
        form.initial["seen_updated_at"] = entry.updated_at.isoformat()
        return form

    @classmethod
    def over_newer(cls, data, entry):
        """The submitted form again, now based on `entry` as it is: what the curator wrote is kept, and
        saving it again replaces the newer edit knowingly."""
        data = data.copy()
        data["seen_updated_at"] = entry.updated_at.isoformat()
        form = cls(data)
        form.is_valid()
        return form


class EntryFilterForm(forms.Form):
    category = forms.ChoiceField(choices=Category.choices, required=False)
    tag = forms.CharField(required=False, max_length=64)
    source = forms.ChoiceField(choices=[("", "Any source"), *EntrySource.choices], required=False)
    status = forms.ChoiceField(
        choices=[(EntryStatus.ACTIVE, "Active"), (EntryStatus.ARCHIVED, "Archived"), ("all", "All")],
        required=False,
    )


class TaskToggleForm(forms.Form):
    line = forms.IntegerField(min_value=0, max_value=1_000_000)
    # The task's text as the page showed it (none from an older page: the line number alone is checked).
    task = forms.CharField(required=False, strip=False, empty_value=None)
    done = forms.TypedChoiceField(choices=[("1", "done"), ("0", "not done")], coerce=lambda v: v == "1")


class ProjectContextForm(forms.Form):
    content = BrowserTextField(
        widget=forms.Textarea(attrs={"rows": 14}),
        required=False,
        strip=False,
        label="Markdown",
        help_text="Markdown injected into every agent's prompt. The previous text is kept as a version.",
    )
    # The context's context_changed_at when the form was opened: a save does not replace a change made
    # since (project_context_set).
    seen_changed_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)

    @classmethod
    def for_project(cls, project, data=None):
        """The form of the project's context as it is; with `data`, the submitted form based on it, so
        that saving again replaces a newer context knowingly."""
        seen = project.context_changed_at.isoformat()
        if data is None:
            return cls(initial={"content": project.context, "seen_changed_at": seen})
        data = data.copy()
        data["seen_changed_at"] = seen
        form = cls(data)
        form.is_valid()
        return form


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="What uses it, e.g. 'laptop agent'.")
    agent = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="Project-wide", to_field_name="slug"
    )
    scope = forms.ChoiceField(choices=TokenScope.choices, initial=TokenScope.WRITE)

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = project.agents.order_by("slug")


class ReviewActionForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject"), ("merge", "merge")])
    content = BrowserTextField(required=False, strip=False, widget=forms.Textarea)
    supersede_conflicting = forms.BooleanField(required=False)
    reason = forms.CharField(required=False, max_length=REJECT_REASON_MAX_CHARS)
    into = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    # The entry's updated_at as the queue showed it: no decision on a text changed since (_pending_get).
    seen_updated_at = forms.DateTimeField(required=False)


class ReviewBulkForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    ids = forms.TypedMultipleChoiceField(coerce=int, choices=[])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        self.fields["ids"].choices = [(v, v) for v in raw if str(v).isdigit() and len(str(v)) < 19]

    def seen_updated_at(self, entry_id: int) -> datetime | None:
        """The entry's updated_at as the queue showed it (its `seen-<id>` field), or None."""
        value = self.data.get(f"seen-{entry_id}") or ""
        try:
            return parse_datetime(value)
        except ValueError:
            return None


class FileForm(forms.Form):
    path = forms.CharField(max_length=255, widget=forms.HiddenInput)
    content = BrowserTextField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 18}))
    # The file's updated_at when the form was opened: a save does not replace a change made since
    # (file_write).
    seen_updated_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)

    @classmethod
    def for_file(cls, file, data=None):
        """The form of `file` as it is; with `data`, the submitted form based on it, so that saving
        again replaces a newer change knowingly."""
        seen = file.updated_at.isoformat()
        if data is None:
            return cls(initial={"path": file.path, "content": file.content, "seen_updated_at": seen})
        data = data.copy()
        data["seen_updated_at"] = seen
        form = cls(data)
        form.is_valid()
        return form


class FileSettingsForm(forms.Form):
    """The settings of one file in the files table, carrying them as the page showed them, so that a
    save writes only what the curator changed and refuses what someone else changed since
    (file_settings_set)."""

    enabled = forms.BooleanField(required=False)
    sort_order = forms.IntegerField(min_value=-1_000_000, max_value=1_000_000)
    seen_enabled = forms.NullBooleanField(required=False, widget=forms.HiddenInput)
    seen_sort_order = forms.IntegerField(required=False, widget=forms.HiddenInput)

    @classmethod
    def over_newer(cls, data, file) -> dict:
        """The settings to show after a refused save: the curator's value of each setting the form
        changed, the current value of the others, now seen as they are; saving that again applies the
        curator's change knowingly and leaves the rest as it is now."""
        form = cls(data)
        form.is_valid()
        values = {}
        for field in ("enabled", "sort_order"):
            submitted, seen = form.cleaned_data.get(field), form.cleaned_data.get(f"seen_{field}")
            changed = submitted is not None and seen is not None and submitted != seen
            values[field] = submitted if changed else getattr(file, field)
        return values


class ReviewPolicyForm(forms.Form):
    category = forms.ChoiceField(choices=[("", "All"), *Category.choices], required=False)
    hold_agent_writes = forms.BooleanField(required=False)
    hold_extracted = forms.BooleanField(required=False)
    redaction = forms.ChoiceField(choices=[("", "unchanged"), ("1", "on"), ("0", "off")], required=False)
