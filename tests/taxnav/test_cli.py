"""The `taxnav` command line as a newcomer meets it: help and version, documented exit codes,
readable `ask` output, and nothing but plain lines (no `\\r` frames) when output is piped."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ingest_worker.progress import Progress
from shared.cli_common import Exit, settings_from
from taxnav import cli
from tests.conftest import EIM, small_corpus

REPO = Path(__file__).resolve().parents[2]
MILEAGE = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"
VAT = "What's the VAT registration threshold for my small business?"
STALE = "What's the van benefit charge for the 2025-26 tax year?"


def taxnav(*args: str, env: dict[str, str] | None = None, timeout: int = 240) -> subprocess.CompletedProcess[str]:
    """The installed entry point's code, as a user runs it, output piped (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "taxnav.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)


def test_version_and_help() -> None:
    from importlib.metadata import version

    done = taxnav("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"taxnav {version('taxnav')}"
    help_text = taxnav("--help").stdout
    assert "register(subparsers" not in help_text  # not the developer docstring
    assert "citation-grounded answers" in help_text
    for code in Exit:
        assert re.search(rf"^\s+{int(code)}\s+\S", help_text, re.M), f"exit code {int(code)} not explained"
    for command in ("ingest", "ask", "serve", "eval", "bench"):
        assert re.search(rf"^\s+{command}\s+\S", help_text, re.M), command


def test_every_subcommand_has_a_description() -> None:
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for name, sub in commands.choices.items():
        assert sub.description and len(sub.description) > 40, f"taxnav {name} --help has no description"
    assert "3 refused" in commands.choices["ask"].format_help()


def test_data_dir_reaches_the_command_as_settings_not_through_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TAXNAV_DATA_DIR", str(tmp_path / "from-env"))
    assert cli.main(["ask", "--data-dir", str(tmp_path / "from-option"), MILEAGE]) == Exit.USAGE  # no index there
    assert str(tmp_path / "from-option") in capsys.readouterr().err
    assert cli.main(["ask", MILEAGE]) == Exit.USAGE  # the option of the call before left nothing behind
    assert str(tmp_path / "from-env") in capsys.readouterr().err


def test_settings_from_the_options_keep_the_rest_of_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAXNAV_DATA_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("TAXNAV_RETRIEVAL__TOP_K", "5")
    settings = settings_from(cli.build_parser().parse_args(["ask", "--data-dir", str(tmp_path / "from-option"), "q"]))
    assert settings.data_dir == tmp_path / "from-option" and settings.retrieval.top_k == 5
    assert settings_from(cli.build_parser().parse_args(["bench", "ingest"])).data_dir == tmp_path / "from-env"


def test_each_package_command_module_loads_without_the_taxnav_command_line() -> None:
    modules = ("gateway.cli", "taxnav.ask", "ingest_worker.cli", "taxnav.chat", "taxnav.evaluation.cli", "taxnav.evaluation.ranker", "taxnav.bench")
    for module in modules:  # each first in a fresh interpreter: an import cycle would fail here
        code = f"import sys, {module}; sys.exit('taxnav.cli' in sys.modules)"
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{module}: {done.stderr or 'imports taxnav.cli'}"


def test_usage_errors_exit_2() -> None:
    assert taxnav("no-such-command").returncode == Exit.USAGE
    assert taxnav("ask").returncode == Exit.USAGE  # the question is missing
    for bad in (["--folds", "1"], ["--seed", "-3"], ["--seed", "one"]):  # before any index or model is read
        done = taxnav("ranker", "cv", *bad)
        assert done.returncode == Exit.USAGE and bad[0] in done.stderr, done.stderr


def test_ask_exit_codes_and_readable_output(slice_data_dir: Path) -> None:
    answered = taxnav("ask", "--data-dir", str(slice_data_dir), MILEAGE)
    assert answered.returncode == Exit.OK, answered.stderr
    out = answered.stdout
    assert "\r" not in out and "\x1b[" not in out  # a pipe gets plain text
    assert out.startswith("Answer\n")
    lines = out.splitlines()
    sentences = [line for line in lines if re.match(r"^  \S.* (\[\d+\])+ (\((answers|background)\) )?(supported|partially supported|unsupported|contradicted)$", line)]
    assert sentences, out
    sources = lines[lines.index("Sources") + 1 :]
    cited = {int(n) for line in sentences for n in re.findall(r"\[(\d+)\]", line)}
    listed = {int(n) for line in sources for n in re.findall(r"\[(\d+)\]", line.split(" EIM")[0])}
    assert cited == listed  # every source number in a sentence resolves to a page line
    assert all("https://www.gov.uk/" in line for line in sources)

    refused = taxnav("ask", "--data-dir", str(slice_data_dir), VAT)
    assert refused.returncode == Exit.REFUSED, refused.stderr
    assert refused.stdout.startswith("Refused: out_of_scope\n")


def test_refusal_evidence_is_printed_whole(slice_data_dir: Path) -> None:
    import json

    as_json = taxnav("ask", "--data-dir", str(slice_data_dir), "--json", STALE)
    assert as_json.returncode == Exit.REFUSED
    evidence = json.loads(as_json.stdout)["refusal"]["evidence"]
    pages = evidence["pages"]
    assert len(json.dumps(pages)) > 300  # long enough that the old 300-character cut would show
    plain = taxnav("ask", "--data-dir", str(slice_data_dir), STALE).stdout
    assert "Evidence" in plain
    for page in pages:  # every page, with its link, on its own line
        assert re.search(rf"^\s+- {page['section_id']} .*{re.escape(page['url'])}$", plain, re.M), page


def test_ask_without_an_index_or_with_an_unknown_manual_lists_what_exists(slice_data_dir: Path, tmp_path: Path) -> None:
    empty = taxnav("ask", "--data-dir", str(tmp_path), MILEAGE)
    assert empty.returncode == Exit.USAGE and "none is ingested yet" in empty.stderr and "Traceback" not in empty.stderr
    unknown = taxnav("ask", "--data-dir", str(slice_data_dir), "--manual", "foo", MILEAGE)
    assert unknown.returncode == Exit.USAGE
    assert "unknown_manual: No ingested manual foo" in unknown.stderr and f"ingested: {EIM}" in unknown.stderr


def test_ask_reads_manual_names_as_the_api_does(slice_data_dir: Path, slice_settings) -> None:  # noqa: ANN001
    """Any case names an ingested manual; a name that is no manual's slug, or one not ingested,
    gets the API's error type and message (422 invalid_manual, 404 unknown_manual), exit 2."""
    from gateway.deps import valid_manual
    from gateway.errors import ApiError

    shouted = taxnav("ask", "--data-dir", str(slice_data_dir), "--manual", EIM.upper(), MILEAGE)
    assert shouted.returncode == Exit.OK, shouted.stderr
    assert shouted.stdout.startswith("Answer\n")
    for name, error_type in (("employment/income", "invalid_manual"), ("business-income-manual", "unknown_manual")):
        with pytest.raises(ApiError) as api:
            valid_manual(slice_settings, name)
        assert api.value.type == error_type and api.value.detail == {"manuals": [EIM]}
        done = taxnav("ask", "--data-dir", str(slice_data_dir), "--manual", name, MILEAGE)
        assert done.returncode == Exit.USAGE, done.stderr
        assert f"taxnav ask: {error_type}: {api.value.message}" in done.stderr
        assert f"ingested: {EIM}" in done.stderr and "taxnav ingest" not in done.stderr


def test_ingest_piped_progress_is_plain_lines_per_phase(tmp_path: Path, corpus_dir: Path, embedding_cache: Path) -> None:
    """A manual's own folder as --source, progress on a pipe: one line per phase start and end."""
    source = small_corpus(corpus_dir, tmp_path / "corpus", {EIM: ["EIM00100", "EIM31240", "EIM31210"]})
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TAXNAV_INGEST__EMBEDDING_CACHE_DIR": str(embedding_cache)}
    done = taxnav("ingest", "--data-dir", str(tmp_path / "data"), "--source", str(source / EIM), env=env)
    assert done.returncode == Exit.OK, done.stderr
    assert f"{EIM}: generation" in done.stdout and "pages 3" in done.stdout
    assert "\r" not in done.stderr and "\x1b[" not in done.stderr
    ends = re.findall(rf"^{EIM}: (crawl|parse|embed|index)\b.* done in [\d.]+s$", done.stderr, re.M)
    assert ends == ["crawl", "parse", "embed", "index"], done.stderr
    assert re.search(rf"^{EIM}: crawl 3/3 pages done", done.stderr, re.M)
    assert "ETA" not in done.stderr


def test_ingest_unknown_manual_lists_the_manuals_there(tmp_path: Path, corpus_dir: Path) -> None:
    source = small_corpus(corpus_dir, tmp_path / "corpus", {EIM: ["EIM00100"], "business-income-manual": ["BIM14000"]})
    done = taxnav("ingest", "--data-dir", str(tmp_path / "data"), "--source", str(source), "--manual", "foo")
    assert done.returncode == Exit.USAGE
    assert "no manual foo" in done.stderr and f"business-income-manual, {EIM}" in done.stderr
    clash = taxnav("ingest", "--data-dir", str(tmp_path / "data"), "--source", str(source / EIM), "--manual", "business-income-manual")
    assert clash.returncode == Exit.USAGE and f"holds only the manual {EIM}" in clash.stderr
    assert not (tmp_path / "data" / "ingest_runs.jsonl").exists()  # nothing started


def test_ingest_from_a_source_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    done = taxnav("ingest", "--data-dir", str(tmp_path / "data"), "--source", str(tmp_path / "nonexistent"))
    assert done.returncode == Exit.USAGE, done.stderr  # as `taxnav ingest --help` says: bad --source
    assert "is neither an http(s) URL nor a directory" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "ingest_runs.jsonl").exists()  # nothing started


def test_eval_without_its_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "haystack", None)  # what an install without the extra looks like to import
    assert cli.main(["eval", "--out", str(tmp_path / "report")]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "'eval' extra" in err and "haystack" in err and "pip install 'taxnav[eval]'" in err
    assert not (tmp_path / "report").exists()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_ends_every_bar_with_its_time_not_an_eta() -> None:
    stream = Terminal()
    with Progress("manual", stream=stream) as bar:
        for done in range(1, 6):
            bar.on_pages(done, 5)
        bar.set_phase("parse")
        bar.on_chunks(0, 8)
        bar.on_chunks(8, 8)
        bar.set_phase("index")
    last_frame = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue()).split("\r")[-1]
    rows = [row for row in last_frame.splitlines() if "manual" in row][-4:]
    assert [row.split()[2] for row in rows] == ["crawl", "parse", "embed", "index"], rows
    assert all(row.startswith("done") and re.search(r"\d:\d\d:\d\d$", row.strip()) for row in rows), rows
    assert "-:--:--" not in last_frame and "ETA" not in last_frame
    assert "5/5" in rows[0] and "8/8" in rows[2]


def test_progress_in_a_pipe_marks_a_failed_phase() -> None:
    stream = io.StringIO()
    with pytest.raises(RuntimeError), Progress("manual", stream=stream) as bar:
        bar.on_pages(2, 5)
        raise RuntimeError("source went away")
    assert "\r" not in stream.getvalue()
    assert re.search(r"^manual: crawl 2/5 pages failed after [\d.]+s$", stream.getvalue(), re.M), stream.getvalue()


def test_embedding_progress_moves_in_small_steps(tmp_path: Path) -> None:
    """The embed phase reports every 16 texts of the local model (not once per 256)."""
    from shared.config import IngestSettings, Settings
    from shared.embeddings import get_embedder

    settings = Settings(data_dir=tmp_path, ingest=IngestSettings(embedding_cache_dir=tmp_path / "cache"))
    reports: list[tuple[int, int]] = []
    texts = [f"mileage allowance payment number {n}" for n in range(40)]
    get_embedder(settings).embed(texts, on_progress=lambda done, total: reports.append((done, total)))
    assert reports == [(0, 40), (16, 40), (32, 40), (40, 40)]
    again: list[tuple[int, int]] = []
    get_embedder(settings).embed(texts, on_progress=lambda done, total: again.append((done, total)))
    assert again == [(40, 40)]  # all cached: done at once


def test_ask_with_another_embedder_than_the_index_is_one_line_and_exit_1(slice_data_dir: Path) -> None:
    import os

    env = dict(os.environ, TAXNAV_MODELS__PROVIDER="mistral", TAXNAV_MODELS__MISTRAL_API_KEY="key")
    env.update(TAXNAV_MODELS__MISTRAL_SERVER_URL="http://127.0.0.1:9", TAXNAV_MODELS__MAX_RETRIES="0")
    done = taxnav("ask", "--data-dir", str(slice_data_dir), MILEAGE, env=env)
    assert done.returncode == Exit.ERROR
    assert "Traceback" not in done.stderr and "re-ingest" in done.stderr and done.stdout == ""
