import pytest

from tests.operations.running import fresh_data_dir, remove_data_dir


@pytest.fixture
def data_dir():
    path = fresh_data_dir()
    yield path
    remove_data_dir(path)
