from sfumato.model.api import ModelInfo
from sfumato.model.line_rewrite import chosen_lines, selection_lines
from sfumato.model.rewrite_effect import HEAVY_REWRITE, rewrite_effect

EMBEDDED = ModelInfo("sfumato-lm", "lm-denoiser", "cpu", 0, False)
BLOCK = "a = 1\n\nb = 2\nc = 3\nd = 4\n"


def test_the_embedded_engine_fixes_below_the_heavy_strength_and_writes_lines_anew_above_it():
    assert rewrite_effect(EMBEDDED, HEAVY_REWRITE - 0.05, BLOCK) == "fixes slips, keeps the rest"
    assert rewrite_effect(EMBEDDED, 0.6, "total = sum(xs)") == "writes the line anew"
    assert rewrite_effect(EMBEDDED, 0.6, BLOCK) == "writes up to 3 of 4 lines anew"
    assert rewrite_effect(EMBEDDED, 1.0, BLOCK) == "writes all 4 lines anew"
    assert rewrite_effect(EMBEDDED, 0.9, "\n  \n") == "fixes slips, keeps the rest"  # no text: a light rewrite


def test_the_count_said_is_the_count_a_heavy_rewrite_chooses_when_every_line_stands_alone():
    lines = selection_lines(BLOCK)
    for strength in (0.5, 0.6, 0.75, 0.8, 1.0):
        chosen = len(chosen_lines(lines, lambda: [0.0] * len(lines), strength))
        assert rewrite_effect(EMBEDDED, strength, BLOCK).startswith((f"writes up to {chosen} of", f"writes all {chosen}"))


def test_other_backends_renoise_that_share_of_the_selection():
    assert rewrite_effect(ModelInfo("g", "diffusion-gemma", "cpu", 0, True), 0.6, BLOCK) == "renoises 60% of it"
    assert rewrite_effect(ModelInfo("r", "remote", "host", 0, True), 0.25, "x") == "renoises 25% of it"
