"""The training corpus: documentation sources, HTML pages read as text, choosing sources."""

from __future__ import annotations

from sfumato.model.training import corpus
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


def test_documents_come_from_the_chosen_sources_and_html_pages_are_read_as_text(tmp_path, monkeypatch):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.py").write_text("x = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "queries.html").write_text(PAGE)
    (tmp_path / "docs" / "search.html").write_text("<html><body>nothing</body></html>")
    roots = [("stdlib", tmp_path / "code", "**/*.py"), ("django-docs", tmp_path / "docs", "**/*.html")]
    monkeypatch.setattr(corpus, "source_roots", lambda: roots)
    every = {doc.name: doc for doc in corpus.iter_documents()}
    assert set(every) == {"stdlib/a.py", "django-docs/queries.html"}  # a page without content is left out
    assert every["django-docs/queries.html"].text == page_text(PAGE)
    assert [doc.name for doc in corpus.iter_documents(sources=["django-docs"])] == ["django-docs/queries.html"]
