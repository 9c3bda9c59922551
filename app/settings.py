"""User settings: what they are, their defaults, and how they are kept (QSettings)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from PySide6.QtCore import QSettings

from sfumato.model.remote.credentials import shown_url

DEFAULT_KEYS = {
    "rewrite": "Ctrl+K",
    "fill_gaps": "Ctrl+Shift+K",
    "accept": "Tab",
    "accept_word": "Ctrl+Right",
    "reject": "Esc",
    "next_alternative": "Alt+]",
    "previous_alternative": "Alt+[",
    "try_again": "Alt+R",
    "toggle_diff": "Alt+D",
}
MAX_RECENT = 10
# The numbers the Settings dialog offers. A stored value outside them (a settings file edited by
# hand or damaged: 100,000 alternatives made the engine batch 100,000 rows, 8 GB at 2,000) keeps
# its default, as a value that does not read as a number does.
BOUNDS: dict[str, tuple[float, float]] = {
    "steps": (0, 1024),
    "sampler_bound": (0.0, 10.0),
    "max_new_tokens": (1, 4096),
    "alternatives": (1, 8),
    "rewrite_strength": (0.05, 1.0),
    "slow_motion_ms": (0, 3000),
    "indent_width": (1, 16),
    "font_size": (0, 96),
}
# What a server the user allowed receives: 1, the text around the region and snippets of the other
# open files; 2, snippets of the open folder's files too. Answers given under a smaller scope are
# asked again.
CONSENT_SCOPE = 2


@dataclass
class Settings:
    model_spec: str = "embedded"
    allow_downloads: bool = False
    device: str = "auto"  # auto, cpu, cuda, cuda:N or mps
    quantize: str = "auto"  # the weights' precision: auto, none, int8 (CPU or CUDA), int4 or nf4 (CUDA)
    trust_remote_code: bool = False
    steps: int = 0  # 0: the model's own default
    sampler_bound: float = 0.0  # entropy a pass may accept: higher is faster, lower is better; 0: default
    max_new_tokens: int = 64  # cap for infill at the cursor; a rewrite follows its selection, at least this
    alternatives: int = 1
    rewrite_strength: float = 0.6
    slow_motion_ms: int = 0  # pause after every pass, to watch the denoising
    underline_low_confidence: bool = False
    suggest_while_typing: bool = True  # a line being typed: the rest the local model is sure of, shown after the cursor
    review_diff: bool = True  # a result is reviewed as a diff against the original (AI > Review as Diff)
    indent_with_spaces: bool = True
    indent_width: int = 4
    auto_close: bool = True  # brackets and quotes get their closer as they are typed
    word_wrap: bool = False  # wrap long lines of code at the window's edge (View > Word Wrap)
    wrap_prose: bool = True  # the same for Markdown and plain-text files (View > Word Wrap in one)
    show_whitespace: bool = False  # spaces and tabs drawn as faint dots and arrows
    theme: str = "system"  # "system" (the desktop's colour scheme), "light" or "dark"
    light_style: str = "default"  # pygments style of the text when the theme is light
    dark_style: str = "monokai"  # pygments style of the text when the theme is dark
    font_family: str = ""  # the text's font; "" for the system's fixed-width font
    font_size: int = 0  # points; 0 for the font's own size
    reopen_files: bool = True  # at start without files named: the files open when it last closed
    folder: str = ""  # the folder open in the sidebar at the last close ("" for none)
    use_server: bool = False  # run AI edits on `server_url` instead of `model_spec`
    server_url: str = ""  # http(s)://host:port/v1; its API key lives in the OS keyring, never here
    server_model: str = ""  # "" for the first model the server lists
    servers_allowed: list[str] = field(default_factory=list)  # origins the user let document text go to
    plain_http_allowed: list[str] = field(default_factory=list)  # public origins allowed without TLS
    consent_scope: int = CONSENT_SCOPE  # the scope ``servers_allowed`` was answered under
    keys: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_KEYS))
    recent_files: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, store: QSettings) -> Settings:
        settings = cls()
        for item in fields(cls):
            default = getattr(settings, item.name)
            if item.name == "keys":
                for action, key in DEFAULT_KEYS.items():
                    settings.keys[action] = str(store.value(f"keys/{action}", key))
                continue
            if not store.contains(item.name):
                continue
            value = store.value(item.name)
            try:
                value = _coerce(value, default)
            except (TypeError, ValueError):
                continue  # a damaged value keeps its default
            low, high = BOUNDS.get(item.name, (value, value))
            if low <= value <= high:  # (not a NaN)
                setattr(settings, item.name, value)
        settings.server_url = shown_url(settings.server_url)  # a password in the URL is never kept
        if not store.contains("consent_scope"):  # written before the scope was kept
            settings.consent_scope = 1
        if settings.consent_scope < CONSENT_SCOPE:
            settings.servers_allowed, settings.consent_scope = [], CONSENT_SCOPE
        return settings

    def save(self, store: QSettings) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "keys":
                for action, key in value.items():
                    store.setValue(f"keys/{action}", key)
            else:
                store.setValue(item.name, value)
        store.sync()

    @property
    def active_model_spec(self) -> str:
        """What the engine loads: the server's URL when a server is chosen, else the model spec."""
        return self.server_url if self.use_server and self.server_url else self.model_spec

    def replace_with(self, other: Settings) -> set[str]:
        """Take ``other``'s values in place (the window's parts share this object); the names that changed."""
        changed = {item.name for item in fields(self) if getattr(self, item.name) != getattr(other, item.name)}
        for name in changed:
            setattr(self, name, getattr(other, name))
        return changed

    def add_recent(self, path: str) -> None:
        self.recent_files = [path] + [p for p in self.recent_files if p != path][: MAX_RECENT - 1]


def _coerce(value: object, default: object) -> object:
    """QSettings returns strings from INI files; turn them back into the default's type."""
    if isinstance(default, bool):
        return value in (True, "true", "1", 1)
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, list):
        if value is None:
            return []
        return [str(item) for item in (value if isinstance(value, list) else [value])]
    return str(value)
