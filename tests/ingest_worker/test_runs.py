"""The ingest run log: records survive concurrent writers and torn lines; reads filter and
order them; page date moves are computed between two generations."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ingest_worker.runs import dates_moved
from shared.contracts.ingest_runs import IngestRun, find_run, read_runs, record_run, runs_path

T0 = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


def make_run(n: int, manual: str = "employment-income-manual", status: str = "ok") -> IngestRun:
    return IngestRun(
        run_id=f"run-{n}",
        manual=manual,
        source="http://127.0.0.1:1",
        trigger="schedule",
        status=status,
        started_at=T0 + timedelta(days=n),
        finished_at=T0 + timedelta(days=n, seconds=5),
        seconds=5.0,
        pages=10 + n,
        changed_pages=[f"EIM{n:05d}"],
    )


def test_records_read_back_newest_first_and_whole(tmp_path: Path) -> None:
    for n in range(3):
        record_run(tmp_path, make_run(n))
    runs = read_runs(tmp_path)
    assert [r.run_id for r in runs] == ["run-2", "run-1", "run-0"]
    assert runs[0] == make_run(2)


def test_reads_filter_by_manual_and_status_and_limit(tmp_path: Path) -> None:
    record_run(tmp_path, make_run(0))
    record_run(tmp_path, make_run(1, manual="business-income-manual"))
    record_run(tmp_path, make_run(2, status="refused"))
    record_run(tmp_path, make_run(3))
    assert [r.run_id for r in read_runs(tmp_path, manual="business-income-manual")] == ["run-1"]
    assert [r.run_id for r in read_runs(tmp_path, status="refused")] == ["run-2"]
    assert [r.run_id for r in read_runs(tmp_path, limit=2)] == ["run-3", "run-2"]
    assert [r.run_id for r in read_runs(tmp_path, manual="employment-income-manual", status="ok")] == ["run-3", "run-0"]


def test_no_log_yet_reads_as_no_runs(tmp_path: Path) -> None:
    assert read_runs(tmp_path / "never-ingested") == []


def test_a_torn_line_does_not_hide_the_other_runs(tmp_path: Path) -> None:
    record_run(tmp_path, make_run(0))
    with runs_path(tmp_path).open("a") as handle:
        handle.write(make_run(1).model_dump_json()[:40] + "\n")  # a writer killed mid-line
        handle.write("\n")
    record_run(tmp_path, make_run(2))
    assert [r.run_id for r in read_runs(tmp_path)] == ["run-2", "run-0"]


def test_one_run_is_found_by_its_whole_id(tmp_path: Path) -> None:
    assert find_run(tmp_path, "run-1") is None  # no log yet
    for n in (1, 10, 11):  # "run-1" is inside the other two ids' lines
        record_run(tmp_path, make_run(n))
    with runs_path(tmp_path).open("a") as handle:
        handle.write(make_run(1).model_dump_json()[:40] + "\n")  # a torn line naming it
    assert find_run(tmp_path, "run-1") == make_run(1)
    assert find_run(tmp_path, "run-11") == make_run(11)
    assert find_run(tmp_path, "run-2") is None


def _write_many(args: tuple[str, int]) -> None:
    data_dir, worker = args
    for n in range(50):
        record_run(Path(data_dir), make_run(worker * 1000 + n))


def test_concurrent_writers_keep_every_line_whole(tmp_path: Path) -> None:
    with ProcessPoolExecutor(max_workers=4) as pool:
        list(pool.map(_write_many, [(str(tmp_path), w) for w in range(4)]))
    lines = runs_path(tmp_path).read_text().splitlines()
    assert len(lines) == 200
    assert len(read_runs(tmp_path, limit=1000)) == 200
    assert {r.run_id for r in read_runs(tmp_path, limit=1000)} == {f"run-{w * 1000 + n}" for w in range(4) for n in range(50)}


def test_dates_moved_reports_changed_new_and_removed_pages_only() -> None:
    old, new = datetime(2014, 9, 8, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)
    before = {"EIM00001": old, "EIM00002": old, "EIM00003": old}
    after = {"EIM00001": old, "EIM00002": new, "EIM00004": new}
    moves = dates_moved(before, after)
    assert [(m.section_id, m.before, m.after) for m in moves] == [
        ("EIM00002", old, new),
        ("EIM00003", old, None),
        ("EIM00004", None, new),
    ]
    assert dates_moved(before, dict(before)) == []
