import pytest

from memoryproject.management.commands.screenshots import demo_seed
from vault.models import EntryVersion

pytestmark = pytest.mark.django_db


def test_the_demo_data_has_what_the_screenshots_show():
    demo = demo_seed()
    assert EntryVersion.objects.filter(entry=demo["edited"]).count() == 2
    assert demo["newer"].supersedes_id is not None and demo["newer"].source_session_id == demo["session"].pk
    assert demo["session"].messages.count() == 5
