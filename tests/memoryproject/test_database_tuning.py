from django.db import connection

from memoryproject.embedded_db import TUNING, TUNING_MARK, tune_config


def test_tuning_is_appended_once_and_keeps_the_existing_settings(tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("max_connections = 100\nshared_buffers = 128MB\n")
    assert tune_config(tmp_path) is True
    assert tune_config(tmp_path) is False  # already there: the file is left alone
    text = conf.read_text()
    assert text.startswith("max_connections = 100\nshared_buffers = 128MB\n")
    assert text.count(TUNING_MARK) == 1
    block = text.split(TUNING_MARK, 1)[1]
    for name, value in TUNING.items():
        assert f"\n{name} = {value}" in block
    # later lines win in postgresql.conf: the tuned shared_buffers comes after initdb's
    assert text.rindex("shared_buffers") > text.index("shared_buffers = 128MB")


def test_tuning_waits_for_initdb(tmp_path):
    assert tune_config(tmp_path) is False
    assert not (tmp_path / "postgresql.conf").exists()


def test_every_connection_runs_without_jit_and_with_generic_plans(db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"
