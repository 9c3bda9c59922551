"""The status-bar line for a served model: server, round trip, speed, and what the user should know."""

from __future__ import annotations


def server_status_line(server: str, round_trip, encrypted: bool, streams_drafts: bool) -> str:
    """E.g. ``Server gpu:8000 · 0.84 s round trip · 212 tokens/s · unencrypted · drafts are not streamed by this server``."""
    parts = [f"Server {server}"]
    if round_trip is not None:
        parts.append(f"{round_trip.seconds:.2f} s round trip")
        approximate = "" if round_trip.tokens_exact else "~"
        parts.append(f"{approximate}{round_trip.tokens_per_second:.0f} tokens/s")
    if not encrypted:
        parts.append("unencrypted")
    if not streams_drafts:
        parts.append("drafts are not streamed by this server")
    return " · ".join(parts)
