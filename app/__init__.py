"""The Qt application (see DESIGN.md). Importing it guards against a PySide6 6.12 refcount bug."""

from app.qt_refcount_fix import make_none_immortal

make_none_immortal()
