"""`taxnav bench screens`: a real gateway on the slice, the page asked in Debian's Chromium at
both widths, per width the screen as the answer lands and the whole page as PNGs, and what each
shows in screens.json; the data dir is only read. Its two usage errors come before any server
starts."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from taxnav import cli

QUESTION = "How much can my employer pay me per mile for using my own car for work without tax?"


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def files_under(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


@pytest.mark.browser
def test_each_width_is_photographed_with_what_it_shows(slice_data_dir: Path, tmp_path: Path) -> None:
    before = files_under(slice_data_dir)
    out = tmp_path / "screens"
    code = cli.main(["bench", "screens", "--data-dir", str(slice_data_dir), "--out", str(out), "--question", QUESTION])
    assert code == 0
    shots = json.loads((out / "screens.json").read_text())["shots"]
    assert [s["width"] for s in shots] == ["desktop", "phone"]
    for shot in shots:
        png = Path(shot["png"])
        assert png.parent == out and png.name == f"01-how-much-can-my-employer-pay-{shot['width']}.png"
        width, height = png_size(png)
        # the whole page, no wider than the screen: nothing pushed it sideways
        assert width == shot["viewport"]["width"] and height > shot["viewport"]["height"], (width, height)
        screen = Path(shot["screen_png"])
        assert screen.name == png.name.replace(".png", "-screen.png")
        assert png_size(screen) == (shot["viewport"]["width"], shot["viewport"]["height"])
        assert shot["first_sentence_on_screen"]
        assert shot["outcome"] == "answered" and shot["answer_sentences"] >= 1
        assert shot["cited_and_checked"] == shot["answer_sentences"] and shot["answer_before_detail"]
        assert shot["as_of"] and shot["overflow_px"] <= 0
        assert shot["detail_sentences"] >= 1 and not shot["detail_open"] and shot["detail_shown"] == 0
    assert files_under(slice_data_dir) == before  # conversations went to a temporary folder


def test_a_missing_chromium_is_a_usage_error(slice_data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    absent = tmp_path / "no-chromium"
    code = cli.main(["bench", "screens", "--data-dir", str(slice_data_dir), "--out", str(tmp_path / "out"), "--question", QUESTION, "--chromium", str(absent)])
    assert code == 2
    assert f"{absent} is missing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_data_dir_without_an_index_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["bench", "screens", "--data-dir", str(tmp_path), "--out", str(tmp_path / "out"), "--question", QUESTION])
    assert code == 2
    assert "no index for manual 'employment-income-manual'" in capsys.readouterr().err
