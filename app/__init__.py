"""The Qt application (see DESIGN.md)."""
