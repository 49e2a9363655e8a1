"""deploy/stack_check.py's judgements, without a Docker engine: how each reply counts (through a
real HTTP server), when a worker has a task in hand, when a container crashed, when the run
passes, which images it uses. The run itself is `make stack-check` (deploy/README.md)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.deploy.compose_cli import ROOT

sys.path.insert(0, str(ROOT / "deploy"))
import stack_check  # noqa: E402

# question -> what GET /v1/questions/{id} answers, in turn (the last one for ever after)
ENDINGS: dict[str, list[tuple[int, object]]] = {
    "answered": [(202, {"stages_done": ["retrieval"]}), (200, {"status": "answered"})],
    "refused": [(200, {"status": "refused"})],
    "model down": [(502, {"error": {"type": "provider_error", "message": "selection failed"}})],
    "deadline": [(202, {"stages_done": ["retrieval", "expansion"]}), (504, {"error": {"type": "timeout", "message": "late"}})],
    "nginx": [(502, "<html>502 Bad Gateway</html>")],
    "silent": [(202, {"stages_done": ["retrieval"]})],
    "redis restarts": [(503, {"error": {"type": "unavailable", "message": "Redis"}}), (0, None), (200, {"status": "answered"})],
    "forgotten": [(202, {"stages_done": []}), (404, {"error": {"type": "not_found", "message": "No question"}})],
    "ended unavailable": [(202, {"stages_done": []}), (503, {"error": {"type": "unavailable", "message": "Redis"}})],
}
NOT_ADMITTED = {"full": (503, {"error": {"type": "unavailable", "message": "Redis is full"}}), "nginx down": (502, "<html>bad</html>")}


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    reads: dict[str, int] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, status: int, body: object) -> None:
            if status == 0:  # the connection closed with no reply (a gateway or proxy restarting)
                self.close_connection = True
                return
            payload = (body if isinstance(body, str) else json.dumps(body)).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:  # noqa: N802
            assert self.path == "/v1/questions?wait=false"
            question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
            self.reply(*NOT_ADMITTED.get(question, (202, {"id": question.replace(" ", "-")})))

        def do_GET(self) -> None:  # noqa: N802
            qid = self.path.rsplit("/", 1)[1]
            endings = ENDINGS[qid.replace("-", " ")]
            reads[qid] = reads.get(qid, -1) + 1
            self.reply(*endings[min(reads[qid], len(endings) - 1)])

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_each_question_counts_as_it_ended(gateway: str) -> None:
    tally = stack_check.Tally(lost_after_s=1.5, poll_s=0.05, settle_s=0.5)
    outcomes = {question: tally.ask(gateway, question) for question in [*ENDINGS, *NOT_ADMITTED]}
    assert outcomes == {
        "answered": "answered", "refused": "refused", "model down": "typed_error", "deadline": "lost",
        "nginx": "untyped_error", "silent": "lost", "redis restarts": "answered",  # followed through the restart
        "forgotten": "lost",  # taken, then its record gone
        "ended unavailable": "typed_error",  # a stage could not write to Redis: it ended so
        "full": "typed_error", "nginx down": "untyped_error",
    }  # fmt: skip
    assert tally.errors == {"provider_error": 1, "unavailable": 2}
    assert sorted(tally.untyped) == ["502: {}", "502: {}"]
    lost = {entry["id"]: entry for entry in tally.lost}
    assert lost["deadline"]["stages_done"] == ["retrieval", "expansion"] and lost["deadline"]["reply"] == 504
    assert lost["silent"]["reply"] == 0 and lost["silent"]["after_s"] >= 1.5


def test_a_task_is_in_hand_from_received_until_it_ends() -> None:
    log = """[..: INFO/MainProcess] Task taxnav.stage.selection[aa-1] received
[..: INFO/ForkPoolWorker-1] Task taxnav.stage.selection[aa-1] succeeded in 0.2s: '{}'
[..: INFO/MainProcess] Task taxnav.stage.selection[bb-2] received
[..: INFO/MainProcess] Task taxnav.stage.selection[cc-3] received
[..: INFO/ForkPoolWorker-2] Task taxnav.stage.selection[cc-3] ignored
"""
    assert stack_check.in_hand(log) == {"bb-2"}
    assert stack_check.in_hand("") == set()


def container(service: str, status: str = "running", restarts: int = 0, exit_code: int = 0) -> dict:
    return {"Name": f"/taxnav-check-{service}-1", "RestartCount": restarts, "State": {"Status": status, "ExitCode": exit_code},
            "Config": {"Labels": {"com.docker.compose.service": service}}}  # fmt: skip


def test_a_crash_is_an_exit_or_a_restart_the_check_did_not_cause() -> None:
    assert stack_check.crash(container("selection"), killed=0) is None
    assert stack_check.crash(container("selection", restarts=1), killed=1) is None  # the policy restarted what the check killed
    assert "restarted 1 times" in stack_check.crash(container("retrieval", restarts=1), killed=0)
    assert "exited" in stack_check.crash(container("graph", status="exited", exit_code=1), killed=0)
    assert stack_check.crash(container("init", status="exited"), killed=0) is None  # the one-shot ingest, done
    assert "init exited 1" in stack_check.crash(container("init", status="exited", exit_code=1), killed=0)


def report(**changes: object) -> dict:
    good = {"questions": 120, "lost": 0, "worker_crashes": 0, "untyped_errors": 0, "killed_mid_question": 3, "redis_restarts": 2,
            "redis_filled": True, "scaled_consumers": {"selection": [5, 6, 7], "retrieval": [9, 8]}}  # fmt: skip
    return good | changes


@pytest.mark.parametrize(
    "changes",
    [{"lost": 1}, {"worker_crashes": 1}, {"untyped_errors": 1}, {"questions": 99}, {"killed_mid_question": 2},
     {"redis_restarts": 1}, {"redis_filled": False}, {"scaled_consumers": {"selection": [5, 0, 7], "retrieval": [9, 8]}},
     {"scaled_consumers": {"selection": [5, 6], "retrieval": [9, 8]}}, {"scaled_consumers": {}}],
)  # fmt: skip
def test_the_run_fails_on_any_shortfall(changes: dict) -> None:
    assert stack_check.passed(report(), kills=3, redis_restarts=2)
    assert not stack_check.passed(report(**changes), kills=3, redis_restarts=2)


def test_images_named_by_the_operator_are_used_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private registry's images: nothing pulled or built instead (no engine needed to decide)."""
    named = {"BASE_IMAGE": "mirror/py:3.11", "REDIS_IMAGE": "mirror/redis:7", "PROXY_IMAGE": "mirror/nginx:1"}
    for var, image in named.items():
        monkeypatch.setenv(var, image)
    assert stack_check.resolve_images() == named


def test_at_least_a_hundred_distinct_labelled_questions() -> None:
    asked = stack_check.questions(120)
    assert len(asked) == len(set(asked)) == 120
    assert asked == stack_check.questions(120)  # the same ones every run


def test_a_second_run_while_one_runs_stops_at_once() -> None:
    """Two runs at once would tear each other's stack down: the second exits 2 before starting."""
    import fcntl
    import subprocess

    (ROOT / ".stack-check").mkdir(exist_ok=True)
    with open(ROOT / ".stack-check" / "lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # a real run holds it: the second run must stop all the same
        second = subprocess.run([sys.executable, str(ROOT / "deploy" / "stack_check.py"), "--prepare"],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
    assert second.returncode == 2 and "another stack-check is running" in second.stderr
