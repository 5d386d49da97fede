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


def test_an_unedited_block_of_an_earlier_version_is_brought_up_to_date(tmp_path, monkeypatch):
    from memoryproject import embedded_db

    conf = tmp_path / "postgresql.conf"
    old = embedded_db._tuning_block(embedded_db.PREVIOUS_TUNING[0])
    conf.write_text(f"max_connections = 100\n\n{old}\nport = 5433\n")
    monkeypatch.setitem(embedded_db.TUNING, "shared_buffers", "'1024MB'")
    assert tune_config(tmp_path) is True
    text = conf.read_text()
    assert "shared_buffers = '1024MB'" in text and "shared_buffers = '256MB'" not in text
    assert text.startswith("max_connections = 100\n") and text.endswith("port = 5433\n")
    assert tune_config(tmp_path) is False


def test_a_block_the_operator_edited_is_left_alone(tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("max_connections = 100\n")
    tune_config(tmp_path)
    edited = conf.read_text().replace("work_mem = '16MB'", "work_mem = '64MB'")
    conf.write_text(edited)
    assert tune_config(tmp_path) is False
    assert conf.read_text() == edited


def test_shared_buffers_follow_the_machine_memory_within_bounds(monkeypatch):
    from memoryproject import embedded_db

    page = 4096
    for memory_gb, expected in ((1, 256), (8, 1024), (64, 2048)):
        monkeypatch.setattr(
            embedded_db.os,
            "sysconf",
            lambda name, gb=memory_gb: page if name == "SC_PAGE_SIZE" else gb * 1024**3 // page,
        )
        assert embedded_db._shared_buffers_mb() == expected
