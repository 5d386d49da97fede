import pytest

from tests.operations.running import fresh_data_dir, remove_data_dir


@pytest.fixture
def data_dir():
    path = fresh_data_dir()
    yield path
    remove_data_dir(path)


@pytest.fixture
def initialised_data_dir(data_dir_templates):
    """A data folder whose embedded PostgreSQL is initialised (initdb) and stopped, not migrated."""
    path = data_dir_templates.copy("initialised")
    yield path
    remove_data_dir(path)


@pytest.fixture
def migrated_data_dir(data_dir_templates):
    """A data folder as a first `serve` (or `migrate`) leaves it, its embedded PostgreSQL stopped."""
    path = data_dir_templates.copy("migrated")
    yield path
    remove_data_dir(path)
