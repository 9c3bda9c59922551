"""Real servers for the remote backend's tests: ``transformers serve`` and a replaying HTTP server.

``transformers serve`` runs in a subprocess on 127.0.0.1 with a tiny random Llama built from the
project's tokenizer (plus a chat template). The streamer's ``cancel``, which the server calls
when a client disconnects mid-stream, also writes a marker line to the server's log: that is how
a test sees that the server noticed a cancel. Nothing else of the server is changed.

``ReplayServer`` (stdlib ``http.server`` in a thread) answers each request with a scripted
reply: recorded-shape SSE chunks, error statuses, HTML, a cut or a stall. It records the request
bodies and whether each client went away before the reply was finished.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
CANCEL_MARK = "SFUMATO-TEST stream cancelled by the client"
CHAT_TEMPLATE = (
    "{% for message in messages %}<bos>{{ message['role'] }}\n{{ message['content'] }}<eos>\n{% endfor %}"
    "{% if add_generation_prompt %}<bos>assistant\n{% endif %}"
)
LAUNCHER = f"""
import sys
from transformers.cli.serving import utils

def marked(cancel, running):
    def wrapper(self, *args):
        if running(self):
            print({CANCEL_MARK!r}, file=sys.stderr, flush=True)
        return cancel(self, *args)
    return wrapper

if hasattr(utils, "DirectStreamer"):  # transformers 5.24: called when the client leaves
    utils.DirectStreamer.cancel = marked(utils.DirectStreamer.cancel, lambda streamer: True)
else:  # 5.25: called as every stream ends; a cancel is one whose request is still running
    utils.Detokenizer.cancel = marked(utils.Detokenizer.cancel, lambda streamer: not streamer.task.done())

from transformers.cli.transformers import main
sys.argv = ["transformers", *sys.argv[1:]]
main()
"""


def build_tiny_llama(folder: Path, tokenizer, chat_template: bool = True) -> Path:
    """A ~0.3M-parameter random Llama with ``tokenizer`` and (unless a base model is asked for) a
    chat template, saved to ``folder``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        do_sample=False, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    model.save_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE if chat_template else None
    tokenizer.save_pretrained(folder)
    return folder


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, signed by nobody a client trusts."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TransformersServer:
    """``transformers serve FOLDER --device cpu`` on a free loopback port, its log in ``log_path``."""

    def __init__(self, folder: Path, log_path: Path):
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self._log = open(log_path, "w")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
        command = [sys.executable, "-c", LAUNCHER, "serve", str(folder), "--device", "cpu",
                   "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, limit: float = 180.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"transformers serve did not come up: {self.log_path.read_text()[-2000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cancels_seen(self) -> int:
        return self.log().count(CANCEL_MARK)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@contextmanager
def serving(folder: Path, log_path: Path) -> Iterator[TransformersServer]:
    """A ``TransformersServer`` of ``folder``, ready, stopped afterwards."""
    server = TransformersServer(folder, log_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


class Asker:
    """Scripted answers to the editor's privacy questions; ``asked`` records their titles."""

    def __init__(self, *answers: bool):
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, title: str, question: str) -> bool:
        self.asked.append(title)
        return self.answers.pop(0)


# ---- the replaying server ------------------------------------------------------------------------

Reply = Callable[["ReplayHandler"], None]


class ReplayHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self._answer(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        self._answer(body)

    def _answer(self, body) -> None:
        replay: ReplayServer = self.server.replay
        replay.requests.append((self.command, self.path, body, dict(self.headers)))
        reply = replay.reply_for(self.command, self.path)
        try:
            reply(self)
        except (BrokenPipeError, ConnectionResetError):
            replay.disconnects += 1
        self.close_connection = True

    # helpers for replies
    def send_json(self, status: int, data, headers: dict | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def send_raw(self, status: int, kind: str, raw: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

    def event(self, data) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        self.wfile.write(f"data: {text}\n\n".encode())
        self.wfile.flush()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    replay: "ReplayServer"

    def handle_error(self, request, client_address) -> None:  # a refused TLS handshake is expected
        pass


class ReplayServer:
    """Loopback server; ``replies[(method, path)]`` scripts each answer (``/v1/models`` has a default)."""

    def __init__(self, model: str = "replay-model", owned_by: str = "replay", certificate: tuple[Path, Path] | None = None):
        self.requests: list[tuple[str, str, object, dict]] = []
        self.disconnects = 0
        self.replies: dict[tuple[str, str], Reply] = {
            ("GET", "/v1/models"): lambda h: h.send_json(200, {"object": "list", "data": [{"id": model, "owned_by": owned_by}]}),
        }
        self._server = _Server(("127.0.0.1", 0), ReplayHandler)
        self._server.replay = self
        if certificate is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.url = f"{'https' if certificate else 'http'}://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def reply_for(self, method: str, path: str) -> Reply:
        return self.replies.get((method, path)) or (lambda h: h.send_json(404, {"detail": "Not Found"}))

    def posts(self, path: str) -> list[dict]:
        return [body for method, p, body, _ in self.requests if method == "POST" and p == path]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def chat_chunk(content: str | None, finish: str | None = None) -> dict:
    delta = {} if content is None else {"role": "assistant", "content": content}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "replay-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def stream_reply(chunks: list, done: bool = True, pause: float = 0.0) -> Reply:
    """An SSE answer of ``chunks`` (dicts or raw strings), optionally ended by ``[DONE]``."""

    def reply(handler: ReplayHandler) -> None:
        handler.start_events()
        for chunk in chunks:
            handler.event(chunk)
            time.sleep(pause)
        if done:
            handler.event("[DONE]")

    return reply


# ---- bad servers: each case scripts a ReplayServer; the backend must fail with one clear line ---------

CHAT = ("POST", "/v1/chat/completions")


def _close_at_once(handler: ReplayHandler) -> None:
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_RDWR)


def _huge_json(handler: ReplayHandler) -> None:
    size = 100 << 20
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(size))
    handler.end_headers()
    block = b" " * (1 << 16)
    for _ in range(size // len(block)):
        handler.wfile.write(block)


def _cut_after_two_chunks(handler: ReplayHandler) -> None:
    stream_reply([chat_chunk("def "), chat_chunk("area(")], done=False)(handler)


def _too_many_tokens(handler: ReplayHandler) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 500, "total_tokens": 505}
    stream_reply([chat_chunk("x"), {**chat_chunk(None, "length"), "usage": usage}])(handler)


def _endless_text(handler: ReplayHandler) -> None:
    stream_reply([chat_chunk("word " * 50) for _ in range(20)])(handler)


BAD_SERVERS: dict[str, tuple[dict, str]] = {
    # case: (replies to install, what the one-line message must say)
    "401 unauthorized": ({CHAT: lambda h: h.send_json(401, {"error": {"message": "Invalid API key"}})}, "Settings > Server"),
    "403 forbidden": ({CHAT: lambda h: h.send_json(403, {"detail": "Forbidden"})}, "refused the API key"),
    "404 model": ({CHAT: lambda h: h.send_json(404, {"error": {"message": "The model `m` does not exist."}})}, "no such model"),
    "429 retry-after": ({CHAT: lambda h: h.send_json(429, {"error": "slow down"}, {"Retry-After": "7"})}, "try again in 7 s"),
    "500 server error": ({CHAT: lambda h: h.send_json(500, {"detail": "CUDA out of memory"})}, "HTTP 500: CUDA out of memory"),
    "502 html page": ({CHAT: lambda h: h.send_raw(502, "text/html", b"<html><body>Bad Gateway</body></html>")}, "HTTP 502: an HTML page"),
    "malformed SSE": ({CHAT: stream_reply([chat_chunk("a"), "{not json"])}, "malformed stream"),
    "stream cut mid-way": ({CHAT: _cut_after_two_chunks}, "before the answer was complete"),
    "more tokens than asked": ({CHAT: _too_many_tokens}, "sent 500 tokens, more than the"),
    "endless text": ({CHAT: _endless_text}, "far more text than the"),
    "100 MB response": ({CHAT: _huge_json}, "more than 8 MiB"),
    "HTML instead of JSON": ({CHAT: lambda h: h.send_raw(200, "text/html", b"<!DOCTYPE html><html></html>")}, "HTML page"),
    "dropped twice": ({CHAT: _close_at_once}, "broke before the answer was complete"),
}
