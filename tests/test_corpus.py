"""The training corpus: documentation sources, HTML pages read as text, whole units held out, licences."""

from __future__ import annotations

import pytest

from sfumato.model.training import lm_corpus
from sfumato.model.training.html_text import page_text

PAGE = """<html><body><div id="global-nav"><a href="index.html">Home</a></div>
<div class="yui-b"><div class="section" id="s-making-queries">
<h1>Making queries<a class="headerlink" href="#making-queries">¶</a></h1>
<p>Once you&#8217;ve created your <a href="models.html"><span class="doc">data models</span></a>, Django
gives you an API.</p>
<div class="highlight"><pre>class Blog(models.Model):

    name = models.CharField(max_length=100)
</pre></div>
<ul><li><p>First item.</p></li><li><p>Second item.</p></li></ul>
</div></div>
<div class="yui-b" id="sidebar"><h3>Contents</h3><p>Browse</p></div></body></html>"""


def test_an_html_page_gives_its_content_sections_as_text():
    assert page_text(PAGE) == (
        "Making queries\n\n"
        "Once you\u2019ve created your data models, Django\ngives you an API.\n\n"
        "class Blog(models.Model):\n\n    name = models.CharField(max_length=100)\n\n"
        "First item.\n\nSecond item.\n"
    )
    assert page_text("<html><body><p>search results</p></body></html>").strip() == ""


def test_files_come_by_unit_and_html_pages_are_read_as_text(tmp_path, monkeypatch):
    (tmp_path / "code" / "pkg").mkdir(parents=True)
    (tmp_path / "code" / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "code" / "tests").mkdir()
    (tmp_path / "code" / "tests" / "test_a.py").write_text("assert True\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "queries.html").write_text(PAGE)
    (tmp_path / "docs" / "search.html").write_text("<html><body>nothing</body></html>")
    roots = [("stdlib", tmp_path / "code", "**/*.py"), ("django-docs", tmp_path / "docs", "**/*.html")]
    monkeypatch.setattr(lm_corpus, "source_roots", lambda: roots)
    monkeypatch.setattr(lm_corpus, "split_of_unit", lambda unit: "train")
    units = lm_corpus.files_by_unit("train")
    assert set(units) == {"stdlib/pkg", "django-docs"}  # the standard library's tests are left out
    assert [path.name for path in units["django-docs"]] == ["queries.html", "search.html"]
    assert lm_corpus.read_text(tmp_path / "docs" / "queries.html") == page_text(PAGE)
    assert lm_corpus.read_text(tmp_path / "docs" / "search.html").strip() == ""  # a page without content: no text
    assert lm_corpus.files_by_unit("heldout") == {}


def test_training_and_the_held_out_figures_refuse_to_run_without_the_documentation(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from sfumato.model.training import adapt, corpus, evaluate_lm

    (tmp_path / "sphinx").mkdir()
    monkeypatch.setattr(corpus, "DOC_SOURCES", [("python-docs", "python3-doc", tmp_path / "absent", "**/*.txt"),
                                                ("sphinx-docs", "sphinx-doc", tmp_path / "sphinx", "**/*.txt")])
    assert corpus.missing_documentation() == "apt-get install python3-doc"
    with pytest.raises(SystemExit, match="apt-get install python3-doc"):
        adapt.main(["--out", str(tmp_path / "run")])
    with pytest.raises(SystemExit, match="apt-get install python3-doc"):
        evaluate_lm.main(["--lines", "1"])
    assert not (tmp_path / "run").exists()


def test_a_whole_unit_is_held_out_or_trained_on():
    assert lm_corpus.unit_of("site-packages", "numpy/core/a.py") == lm_corpus.unit_of("site-packages", "numpy/b.py")
    assert lm_corpus.unit_of("stdlib", "json.py") == "stdlib/json"
    assert lm_corpus.split_of_unit("requests-docs") == "heldout" and lm_corpus.split_of_unit("python-docs") == "train"


def test_the_corpus_leaves_out_packages_whose_licence_metadata_is_copyleft():
    from sfumato.model.training.corpus import restricted_packages

    restricted = restricted_packages()
    assert {"PySide6", "shiboken6", "tqdm", "hypothesis"} <= restricted  # LGPL/GPL, MPL, MPL
    assert not {"numpy", "transformers", "torch", "pygments"} & restricted  # BSD, Apache, BSD, BSD
