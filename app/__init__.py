"""The Qt application (see docs/architecture.md)."""
