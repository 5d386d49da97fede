"""The database cache table (rate-limit counters when REDIS_URL is not set).

Created by a migration so that every way of setting up a database (serve, bin/test, a benchmark, a web
process on another host) has it; `createcachetable` only creates tables for database-backed caches and
does nothing when a table already exists.
"""

from django.core.management import call_command
from django.db import migrations


def cache_table_create(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = []

    operations = [migrations.RunPython(cache_table_create, migrations.RunPython.noop)]
