"""A STAND-IN for the Mistral API (the real one is not reachable here): a local HTTP server
speaking Mistral's wire format for ``POST /v1/embeddings`` and ``POST /v1/chat/completions``,
so the mistralai SDK and our adapters run unchanged against it.

- Embeddings: deterministic pseudo-random unit vectors per text (same text, same vector).
- Chat: replies are scripted by the test: ``chat_replies`` (a queue, used first) holds
  ``Reply`` objects, plain strings (the message content) or callables taking the request
  body; when it is empty ``chat_handler`` (if set) answers. Every request is recorded.

    with MistralStandin() as standin:
        settings.models.mistral_server_url = standin.base_url
        settings.models.mistral_api_key = standin.api_key
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


@dataclass
class Reply:
    content: str | None = None  # the assistant message content (status 200)
    status: int = 200
    raw: str | None = None  # a raw body instead (an error body, or not JSON at all)
    delay_s: float = 0.0


ChatScript = Reply | str | Callable[[dict], "Reply | str"]


def pseudo_embedding(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dims)
    return (vector / np.linalg.norm(vector)).tolist()


class MistralStandin:
    def __init__(self, dims: int = 1024, api_key: str = "standin-key") -> None:
        self.dims = dims
        self.api_key = api_key
        self.requests: list[tuple[str, dict]] = []  # (path, JSON body)
        self.chat_replies: deque[ChatScript] = deque()
        self.chat_handler: Callable[[dict], Reply | str] | None = None
        self.fail_embeddings_with: int | None = None  # an HTTP status to answer embeddings with
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def chat_requests(self) -> list[dict]:
        return [body for path, body in self.requests if path == "/v1/chat/completions"]

    def __enter__(self) -> MistralStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- replies ---------------------------------------------------------------------------

    def _chat(self, body: dict) -> Reply:
        with self._lock:
            script: ChatScript | None = self.chat_replies.popleft() if self.chat_replies else self.chat_handler
        if script is None:
            return Reply(status=500, raw=json.dumps({"message": "stand-in: no chat reply scripted"}))
        if callable(script) and not isinstance(script, Reply):
            script = script(body)
        return Reply(content=script) if isinstance(script, str) else script

    def _completion(self, body: dict, content: str) -> dict:
        return {
            "id": f"cmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stand-in"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "tool_calls": None}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _embeddings(self, body: dict) -> tuple[int, str]:
        if self.fail_embeddings_with:
            return self.fail_embeddings_with, json.dumps({"message": "stand-in: embeddings failing on purpose"})
        inputs = body.get("inputs", body.get("input", []))
        inputs = [inputs] if isinstance(inputs, str) else inputs
        data = [{"object": "embedding", "embedding": pseudo_embedding(text, self.dims), "index": i} for i, text in enumerate(inputs)]
        usage = {"prompt_tokens": sum(len(t.split()) for t in inputs), "total_tokens": sum(len(t.split()) for t in inputs)}
        return 200, json.dumps({"id": "embd-standin", "object": "list", "data": data, "model": body.get("model", "mistral-embed"), "usage": usage})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, text: str) -> None:
                payload = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the caller gave up or was killed mid-request (some tests do that)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    return self._send(400, json.dumps({"message": "invalid JSON"}))
                with standin._lock:
                    standin.requests.append((self.path, body))
                if self.headers.get("Authorization") != f"Bearer {standin.api_key}":
                    return self._send(401, json.dumps({"message": "Unauthorized"}))
                if self.path == "/v1/embeddings":
                    return self._send(*standin._embeddings(body))
                if self.path == "/v1/chat/completions":
                    reply = standin._chat(body)
                    time.sleep(reply.delay_s)
                    if reply.raw is not None:
                        return self._send(reply.status, reply.raw)
                    return self._send(reply.status, json.dumps(standin._completion(body, reply.content or "")))
                return self._send(404, json.dumps({"message": f"no route {self.path}"}))

        return Handler


def grounded_chat(body: dict) -> str:
    """A deterministic "model" for end-to-end runs with provider=mistral: it answers the
    prompts services/providers/prompts.py holds from the text they carry. Selection keeps
    every page offered, stitching quotes the first sentence of the first paragraph offered
    (citing it), verification calls every claim supported (the deterministic check still
    applies on top)."""
    from services.providers import prompts  # noqa: PLC0415  (tests only)

    system = body["messages"][0]["content"]
    user = body["messages"][1]["content"]
    if system.startswith(prompts.SELECT_SYSTEM):
        keep = [line[3:].strip() for line in user.splitlines() if line.startswith("## ")]
        return json.dumps({"keep": keep})
    if system == prompts.STITCH_SYSTEM:
        for line in user.splitlines():
            if line.startswith("[") and "] " in line:
                pid, text = line[1:].split("] ", 1)
                first = text.split(". ")[0].rstrip(".") + "."
                return json.dumps({"sentences": [{"text": first, "citations": [pid]}]})
        return json.dumps({"sentences": []})
    if system == prompts.VERIFY_SYSTEM:
        claims = sum(1 for line in user.splitlines() if line.startswith("Claim "))
        return json.dumps({"verdicts": [{"index": i, "verdict": "supported", "reason": "stated in the cited text"} for i in range(claims)]})
    return json.dumps({})
