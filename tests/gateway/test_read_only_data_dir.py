"""Serving from a data directory that cannot be written (a mounted volume, a CI sandbox): the
conversations and tantivy's lock file go to private temp directories, said in the log at
start-up, and questions and conversations are answered as usual.

Read-only is made two ways. A real read-only bind mount in a private mount namespace
(`unshare -m`, needs root or user namespaces; skipped where neither is allowed) serves a
whole gateway process from it. In process, the data directory is chmod'ed read-only; root
writes through permission bits, so there (this suite runs as root) the test instead makes
every `os.mkdir`/`os.open` under the data directory fail with EROFS, as a read-only mount
would: what it exercises is the probe (shared/fs.py) and the fallback, not the kernel."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import shared.fs
from gateway.app import create_app
from shared.config import Settings
from tests.conftest import REPO

MILEAGE = "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?"


def chmod_stops_writes(directory: Path) -> bool:
    """Whether permission bits stop this process writing in ``directory`` (not for root)."""
    try:
        (directory / ".probe").touch()
    except PermissionError:
        return True
    (directory / ".probe").unlink()
    return False


def refuse_writes_under(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """What a read-only mount does to every directory or file made under ``root``."""
    real_mkdir, real_open = os.mkdir, os.open

    def under(path: object) -> bool:
        return Path(os.fsdecode(path)).resolve(strict=False).is_relative_to(root.resolve())

    def mkdir(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if under(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and under(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)


def test_conversations_fall_back_to_a_temp_dir_said_at_start_up(
    slice_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "collections").symlink_to(Path(slice_settings.data_dir) / "collections")  # the slice, only read
    data_dir.chmod(0o555)
    if not chmod_stops_writes(data_dir):  # root: simulate the read-only mount (module docstring)
        refuse_writes_under(monkeypatch, data_dir)
    assert not shared.fs.writable(data_dir / "conversations")
    settings = slice_settings.model_copy(update={"data_dir": data_dir})
    try:
        with caplog.at_level(logging.WARNING), TestClient(create_app(settings)) as client:
            said = [r.getMessage() for r in caplog.records if r.name == "services.conversations.store"]
            assert len(said) == 1 and f"{data_dir / 'conversations'} is not writable" in said[0], said  # at start-up
            fallback = Path(said[0].split("keeping them in ")[1].split()[0])
            created = client.post("/v1/conversations")
            assert created.status_code == 201, created.text
            cid = created.json()["id"]
            answered = client.post(f"/v1/conversations/{cid}/questions", json={"question": MILEAGE})
            assert answered.status_code == 200 and answered.json()["status"] == "answered", answered.text
            assert (fallback / f"{cid}.json").is_file()
            assert client.get(f"/v1/conversations/{cid}").json()["turns"][0]["question"] == MILEAGE
    finally:
        data_dir.chmod(0o755)
    assert sorted(p.name for p in data_dir.iterdir()) == ["collections"]  # nothing written there


def test_the_writable_probe_tries_a_write(tmp_path: Path) -> None:
    assert shared.fs.writable(tmp_path / "new" / "dir") and (tmp_path / "new" / "dir").is_dir()
    assert list((tmp_path / "new" / "dir").iterdir()) == []  # the probe leaves nothing behind
    assert not shared.fs.writable(Path("/proc/self/no-such-dir"))  # /proc refuses it, even to root


READ_ONLY_SERVE = """
import json, logging, sys
from pathlib import Path
from fastapi.testclient import TestClient
from gateway.app import create_app
from shared.config import Settings

logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
with TestClient(create_app(Settings(data_dir=Path(sys.argv[1]), mode="embedded"))) as client:
    question = client.post("/v1/questions", json={"question": sys.argv[2]})
    cid = client.post("/v1/conversations").json()["id"]
    turn = client.post(f"/v1/conversations/{cid}/questions", json={"question": sys.argv[2]})
    print(json.dumps({"question": [question.status_code, question.json().get("status")],
                      "turn": [turn.status_code, turn.json().get("status")]}))
"""


def can_mount_privately(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    target = tmp_path / "probe-mount"
    target.mkdir()
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro tmpfs {target}"], capture_output=True, timeout=30)
    return done.returncode == 0


def test_a_gateway_serves_from_a_read_only_mount(slice_data_dir: Path, tmp_path: Path) -> None:
    """The real thing: the slice bind-mounted read-only (in a mount namespace of the child's own,
    so the mount neither outlives it nor shows outside), a question and a conversation's turn."""
    if not can_mount_privately(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m needs root or user namespaces)")
    mount = tmp_path / "read-only-data"
    mount.mkdir()
    script = (
        f"mount --bind {slice_data_dir} {mount} && mount -o remount,ro,bind {mount} && "
        f'exec {sys.executable} -c "$0" {mount} "$1"'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXNAV_")} | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, READ_ONLY_SERVE, MILEAGE], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"question": [200, "answered"], "turn": [200, "answered"]}, done.stderr
    assert f"conversations: {mount / 'conversations'} is not writable" in done.stderr
    assert "bm25: " in done.stderr and "is read-only; searching a copy in" in done.stderr
    assert not any(mount.iterdir())  # the mount lived in the child's namespace only
