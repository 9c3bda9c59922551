"""The remote backend against a real ``transformers serve`` (tiny random Llama, 127.0.0.1).

Random weights write nonsense: the tests assert the protocol's behaviour (drafts per chunk,
accumulation, the final result, cancel reaching the server, the CLI's output lines), not text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time

import pytest

from sfumato.model.api import CancelFlag, Cancelled, InfillRequest, TemplateRequest
from sfumato.model.loading import load_backend
from sfumato.model.remote.backend import connect
from sfumato.model.worker import InferenceWorker
from remote_servers import REPO_ROOT, build_tiny_llama, free_port, serving


@pytest.fixture(scope="module")
def backend(transformers_server):
    backend = connect(transformers_server.url)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def base_server(project_tokenizer, tmp_path_factory):
    """``transformers serve`` of a base model: no chat template, so its chat endpoint answers 500."""
    folder = build_tiny_llama(tmp_path_factory.mktemp("tiny-base"), project_tokenizer, chat_template=False)
    with serving(folder, tmp_path_factory.mktemp("serve-base") / "server.log") as server:
        yield server


def test_a_base_model_without_a_chat_template_is_answered_through_completions(base_server):
    backend = connect(base_server.url)
    try:
        final = list(backend.stream([InfillRequest(prefix="def area(w, h):\n    return ", suffix="\n", max_new_tokens=6)]))[-1][0]
        assert final.final and final.text and not backend.profile.chat
        assert re.search(r'POST /v1/chat/completions HTTP/1.1" [45]\d\d', base_server.log())  # refused: no template
        rewrite = InfillRequest(prefix="x = ", suffix="\n", init_text="1 + 1", strength=0.5, max_new_tokens=4)
        assert list(backend.stream([rewrite]))[-1][0].text  # straight to completions now
    finally:
        backend.close()


def test_the_model_spec_url_connects_to_the_server_and_names_its_model(transformers_server, tiny_llama_dir):
    backend = load_backend(transformers_server.url)
    assert backend.info.backend == "remote"
    assert backend.info.name == str(tiny_llama_dir)  # the first (only) entry of /v1/models
    assert backend.info.device == f"127.0.0.1:{transformers_server.port}"
    assert backend.profile.fim is None and backend.profile.chat  # no /tokenize: chat prompts
    assert not backend.profile.extras and not backend.streams_drafts
    backend.close()


def test_infill_yields_one_draft_per_chunk_whose_text_accumulates(backend):
    request = InfillRequest(prefix="def area(w, h):\n    return ", suffix="\n", max_new_tokens=12)
    drafts = [batch[0] for batch in backend.stream([request])]
    *passes, final = drafts
    assert final.final and not any(draft.final for draft in passes)
    assert len(passes) >= 1
    assert all(draft.batch_passes == 0 and draft.forward_passes == 0 for draft in drafts)  # passes unknown, never invented
    for earlier, later in zip(passes, passes[1:]):
        assert later.text.startswith(earlier.text)
    assert final.text == passes[-1].text
    assert "".join(token.text for token in final.tokens) == final.text
    assert all(token.accepted for token in final.tokens)
    assert 1 <= final.generated_tokens <= 12
    assert backend.round_trip.tokens == final.generated_tokens and backend.round_trip.tokens_exact
    assert backend.round_trip.first_chunk_seconds is not None


def test_alternatives_and_several_requests_each_get_their_own_result(backend):
    requests = [
        InfillRequest(prefix="x = ", max_new_tokens=4, n_alternatives=2),
        InfillRequest(prefix="y = ", max_new_tokens=4, init_text="1 + 1", strength=0.5),
    ]
    final = list(backend.stream(requests))[-1]
    assert len(final) == 2 and all(draft.final for draft in final)
    assert len(final[0].candidates) == 2 and len(final[1].candidates) == 1
    assert all(candidate.text for draft in final for candidate in draft.candidates)


def test_a_template_fills_each_gap_through_the_server(backend):
    template = TemplateRequest(segments=("a = ", "\nb = ", "\n"), max_new_tokens=(3, 3))
    final = list(backend.stream_template(template))[-1]
    assert len(final) == 2 and all(draft.final and draft.text for draft in final)


def test_cancel_mid_stream_closes_the_stream_and_the_server_sees_the_disconnect(backend, transformers_server):
    before = transformers_server.cancels_seen()
    cancel = CancelFlag()
    received = []
    with pytest.raises(Cancelled):
        for batch in backend.stream([InfillRequest(prefix="once upon", max_new_tokens=3000)], cancel):
            received.append(batch[0].text)
            if len(received) == 3:
                threading.Thread(target=cancel.set).start()  # as the editor does: from another thread
    assert 3 <= len(received) < 3000
    deadline = time.monotonic() + 60
    while transformers_server.cancels_seen() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert transformers_server.cancels_seen() == before + 1
    # the server is free again: the next request is answered in full
    final = list(backend.stream([InfillRequest(prefix="next", max_new_tokens=3)]))[-1][0]
    assert final.final and final.text


def test_the_worker_runs_remote_jobs_and_reports_a_cancel(transformers_server):
    worker = InferenceWorker(lambda: connect(transformers_server.url))
    worker.start()
    done, cancelled = threading.Event(), threading.Event()
    results = []
    worker.submit([InfillRequest(prefix="a", max_new_tokens=4)], lambda d: None, lambda d: (results.append(d), done.set()), results.append)
    assert done.wait(60) and results[0][0].final
    owner = object()
    first_draft = threading.Event()
    job = worker.submit([InfillRequest(prefix="b", max_new_tokens=3000)], lambda d: first_draft.set(), results.append,
                        results.append, on_cancelled=cancelled.set, owner=owner)
    assert first_draft.wait(60)
    job.cancel()
    assert cancelled.wait(60)
    worker.stop()


def _infill_cli(url: str, lines: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sfumato.app.cli", "infill", "--jsonl", "--model", url],
        input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
    )


def test_infill_jsonl_against_the_server_answers_every_line_in_order(transformers_server):
    lines = [
        json.dumps({"id": 1, "prefix": "def f():\n    ", "suffix": "\n", "max_new_tokens": 5}),
        "{not json",
        json.dumps({"id": "b", "prefix": "x = ", "max_new_tokens": 3}),
    ]
    run = _infill_cli(transformers_server.url, lines)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [record.get("id") for record in records] == [1, None, "b"]
    assert set(records[0]) == {"id", "text", "forward_passes", "tokens", "seconds", "confident"} and records[0]["text"]
    assert "error" in records[1] and "text" not in records[1]
    assert 1 <= records[2]["tokens"] <= 3


def test_infill_jsonl_where_nothing_listens_exits_1_with_one_clean_line():
    run = _infill_cli(f"http://127.0.0.1:{free_port()}/v1", [json.dumps({"id": 1, "prefix": "a"})])
    assert run.returncode == 1
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "connection refused" in lines[0] and "Traceback" not in run.stderr


def test_fill_and_bench_run_against_the_server(transformers_server, tmp_path):
    template = tmp_path / "t.py"
    template.write_text("x = [MASK:3]\ny = [MASK:3]\n")
    out = tmp_path / "out.py"
    fill = subprocess.run([sys.executable, "-m", "sfumato.app.cli", "fill", str(template), "-o", str(out), "--model", transformers_server.url],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert fill.returncode == 0, fill.stderr
    assert "[MASK" not in out.read_text() and out.read_text().startswith("x = ")
    bench = subprocess.run([sys.executable, "-m", "sfumato.app.cli", "bench", "--quick", "--json", "--model", transformers_server.url],
                           capture_output=True, text=True, cwd=REPO_ROOT, timeout=600)
    assert bench.returncode == 0, bench.stderr
    figures = json.loads(bench.stdout)
    assert figures["server"] == f"127.0.0.1:{transformers_server.port}" and figures["tokens_counted_by_server"]
    assert figures["first_chunk_ms_median"] > 0 and figures["tokens_per_second_median"] > 0
    assert figures["cancel_to_closed_ms_median"] >= 0
