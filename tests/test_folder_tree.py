"""The sidebar's folder tree: the opened folder's own files, its skipped folders left out."""

import pytest

from sfumato.app.folder import FolderTree


@pytest.mark.parametrize("where", [".config/project", "site-packages", "work/venv", "pkg.egg-info"])
def test_the_opened_folder_is_the_trees_root_whatever_its_name_or_its_parents(qtbot, tmp_path, capfd, where):
    """A folder named as a skipped one, or inside a hidden one, showed the whole file system."""
    root = tmp_path / where
    (root / "node_modules").mkdir(parents=True)
    (root / "node_modules" / "x.js").write_text("x\n")
    (root / "app.py").write_text("x = 1\n")
    tree = FolderTree()
    qtbot.addWidget(tree)
    qtbot.wait(50)  # rows the file model reads before any folder is open are filtered too
    tree.set_root(str(root))
    model = tree.model()

    def names() -> list[str]:
        return [model.index(row, 0, tree.rootIndex()).data() for row in range(model.rowCount(tree.rootIndex()))]

    qtbot.waitUntil(lambda: names() == ["app.py"], timeout=10000)
    assert tree.rootIndex().isValid() and tree.rootIndex().data() == root.name
    assert "Error calling Python override" not in capfd.readouterr().err
