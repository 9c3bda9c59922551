"""The animation at default settings: passes shown for a minimum time, skipped evenly, noise drawn.

The scripted backend below yields all its passes at once, as a fast model does: without pacing
the editor would show one frame of noise and then the result.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from test_app_support import make_engine, qasync_loop, select  # noqa: F401 - fixture

from sfumato.app import pacing
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.infill import InfillOptions, EditStarter
from sfumato.app.noise import GLYPHS, with_noise
from sfumato.app.commandkeys import DEFAULT_SESSION_KEYS
from sfumato.app.textpositions import document_text
from sfumato.model.api import Candidate, Draft, ModelInfo, TokenState

TEXT = "def f():\n    old = 1\n    return old\n"
RESULT = "    new = 2\n    return new\n"  # rewrites lines 2-3
PASSES = 30


def absorbing_draft(step: int, final: bool = False) -> Draft:
    """RESULT one character a token; the first step/PASSES of them settled, the rest masks (no text)."""
    settled = len(RESULT) * step // PASSES
    tokens = tuple(TokenState(ch if i < settled else "", 0.9 if i < settled else 0.01, i < settled) for i, ch in enumerate(RESULT))
    return Draft(step, (Candidate("".join(t.text for t in tokens), tokens),), final, step, settled)


class InstantBackend:
    """Yields PASSES passes and the result without pausing, like a model faster than the screen."""

    info = ModelInfo(name="instant", backend="masked-diffusion", device="cpu", parameters=0, instruction_tuned=False)

    def stream(self, requests, cancel=None):
        for step in range(1, PASSES):
            yield (absorbing_draft(step),)
        yield (absorbing_draft(PASSES, final=True),)


def start(qtbot, qasync_loop):  # noqa: F811
    engine = make_engine(qasync_loop, InstantBackend(), qtbot)
    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.setPlainText(TEXT)
    select(editor, TEXT.index("    old"), len(TEXT))
    shown = []  # (when the pacer drew it, "Pass n/…" message, document text) of every pass before the result
    session = EditStarter(engine, InfillOptions(), DEFAULT_SESSION_KEYS).rewrite(editor)
    session.progress.connect(lambda message: shown.append((session._pacer._last_shown, message, document_text(editor.document())))
                             if message.startswith("Pass") else None)
    return engine, editor, session, shown


def test_a_run_faster_than_the_screen_is_animated_pass_by_pass_spaced_and_evenly_skipped(qtbot, qasync_loop):  # noqa: F811
    engine, editor, session, shown = start(qtbot, qasync_loop)
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    texts = [text for _, _, text in shown]
    assert len(set(texts)) >= 5, "the animation showed too few distinct passes"
    gaps = [b - a for (a, _, _), (b, _, _) in zip(shown, shown[1:])]
    assert min(gaps) >= pacing.MIN_PASS_MS / 1000
    steps = [int(message.split()[1].split("/")[0]) for _, message, _ in shown]
    strides = [b - a for a, b in zip(steps, steps[1:])]
    assert len(steps) < PASSES - 1, "nothing was skipped"
    assert max(strides) - min(strides) <= 2, f"passes were not skipped evenly: {steps}"
    assert document_text(editor.document()) == TEXT[: TEXT.index("    old")] + RESULT
    engine.stop()


def test_accept_takes_the_result_at_once_even_before_the_animation_reaches_it(qtbot, qasync_loop):  # noqa: F811
    engine, editor, session, shown = start(qtbot, qasync_loop)
    qtbot.waitUntil(lambda: session.result_in, timeout=10000)
    assert session.state == "running"  # the animation is still on its way to the result
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert session.state == "ended" and editor.session is None
    assert document_text(editor.document()) == TEXT[: TEXT.index("    old")] + RESULT
    editor.undo()
    assert document_text(editor.document()) == TEXT
    engine.stop()


def test_undecided_positions_are_drawn_as_glyphs_that_change_from_pass_to_pass():
    original = "    old = 1\n    return old\n"
    first, again, second = (with_noise((absorbing_draft(step),), [original])[0] for step in (6, 6, 7))
    assert first.text == again.text, "the same pass must look the same"
    assert first.text != second.text
    settled = len(RESULT) * 6 // PASSES
    noise = "".join(first.text[settled:].split())  # the missing lines keep their indentation
    assert noise and set(noise) <= set(GLYPHS)
    assert first.text.count("\n") >= original.count("\n"), "the region lost lines while denoising"
    assert "".join(token.text for token in first.tokens) == first.text
    final = absorbing_draft(PASSES, final=True)
    assert with_noise((final,), [original]) == (final,)


def test_a_passing_draft_keeps_the_lines_of_the_text_it_replaces():
    draft = Draft(3, (Candidate("ab", (TokenState("a", 0.2, False), TokenState("b", 0.9, True))),))
    assert with_noise((draft,), ["xy"]) == (draft,), "a draft with nothing undecided and no line missing is shown as it is"
    shown = with_noise((draft,), ["first\n    two\n\tthree"])[0].text
    lines = shown.split("\n")
    assert lines[0] == "ab" and len(lines) == 3
    assert lines[1].startswith("    ") and len(lines[1]) == len("    two") and set(lines[1].strip()) <= set(GLYPHS)
    assert lines[2].startswith("\t") and len(lines[2]) == len("\tthree")


def test_a_passing_draft_of_a_rewrite_never_has_more_lines_than_its_original():
    text = "one\ntwo\n\nthree\nfour"
    draft = Draft(3, (Candidate(text, (TokenState("one\ntwo\n", 0.9, True), TokenState("\nthree\nfour", 0.2, False))),))
    shown = with_noise((draft,), ["a single long line of prose"])[0]
    assert shown.text == "one two  three four" and "".join(token.text for token in shown.tokens) == shown.text
    assert with_noise((draft,), ["first\nsecond"])[0].text == "one\ntwo  three four"
    assert with_noise((draft,), [""]) == (draft,), "an infill grows as its draft does"


def test_the_speed_of_a_slow_run_is_no_zero():
    """Seen under Xvfb on a loaded machine: a rewrite's result said '0 tokens/s'."""
    from sfumato.app.run_status import speed

    draft = Draft(12, (Candidate("x", (TokenState("x", 0.9, True),)),), True, forward_passes=12, generated_tokens=12)
    assert speed((draft,), 40.0) == "1.0 tokens/pass · 0.3 tokens/s"
    assert speed((draft,), 0.5) == "1.0 tokens/pass · 24 tokens/s"
