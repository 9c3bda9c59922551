"""Which files of an open folder may go to a model as project context.

Never a hidden file or one in a hidden folder (``.env``, ``.git/``, ``.ssh/``), never the usual
secret files (``SECRET_PATTERNS``: keys, certificates, credentials), never a file that git
ignores, and never a symbolic link (it may point anywhere). Git's ignore rules are read with
``pathspec`` from every ``.gitignore`` on the way down and ``.git/info/exclude``; a deeper
``.gitignore`` overrides a shallower one, and an ignored folder hides everything in it, as in git.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from pathspec import GitIgnoreSpec

from sfumato.app.folder import is_skipped_folder
from sfumato.model.regular_file import open_regular

SECRET_PATTERNS = (
    ".env*", "*.env", ".netrc", "_netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.gpg", "*.asc",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*credentials*", "*secret*", "*.tfvars", "*.tfstate",
)
SECRETS = GitIgnoreSpec.from_lines(SECRET_PATTERNS)
MAX_IGNORE_FILE_BYTES = 1 << 20  # a .gitignore larger than this is read this far


def is_hidden_or_secret(relative: str) -> bool:
    """``relative`` (a path, ``/`` or the OS separator) names a hidden or a secret file."""
    parts = relative.replace(os.sep, "/").split("/")
    return any(part.startswith(".") for part in parts) or SECRETS.match_file(parts[-1])


class ContextRules:
    """The ignore rules of the folder ``root``; each folder's ``.gitignore`` is read once."""

    def __init__(self, root: str):
        self.root = root
        self._specs: dict[str, GitIgnoreSpec | None] = {}

    def admits(self, relative: str) -> bool:
        """The file at ``relative`` (to the root) may be sent: not hidden, secret or ignored."""
        parts = relative.replace(os.sep, "/").split("/")
        if is_hidden_or_secret(relative):
            return False
        folders = ("/".join(parts[:depth]) for depth in range(1, len(parts)))
        return not any(self.ignored(folder, folder=True) for folder in folders) and not self.ignored("/".join(parts))

    def ignored(self, relative: str, folder: bool = False) -> bool:
        """Git ignores ``relative`` (``/``-separated), by the deepest ``.gitignore`` that says."""
        parts = relative.split("/")
        for depth in range(len(parts) - 1, -1, -1):
            spec = self._spec("/".join(parts[:depth]))
            if spec is not None:
                verdict = spec.check_file("/".join(parts[depth:]) + ("/" if folder else "")).include
                if verdict is not None:
                    return verdict
        return False

    def files(self) -> Iterator[str]:
        """The files under the root that may be sent, as ``/``-separated relative paths, sorted."""
        for folder, subfolders, files in os.walk(self.root):
            relative = os.path.relpath(folder, self.root).replace(os.sep, "/")
            prefix = "" if relative == "." else relative + "/"
            subfolders[:] = sorted(name for name in subfolders
                                   if not is_skipped_folder(name) and not self.ignored(prefix + name, folder=True))
            for name in sorted(files):
                path = prefix + name
                if not is_hidden_or_secret(name) and not self.ignored(path) and not os.path.islink(os.path.join(folder, name)):
                    yield path

    def _spec(self, folder: str) -> GitIgnoreSpec | None:
        if folder not in self._specs:
            names = [os.path.join(folder, ".gitignore")] + ([os.path.join(".git", "info", "exclude")] if not folder else [])
            lines = [line for name in names for line in _lines(os.path.join(self.root, name))]
            self._specs[folder] = GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[folder]


def _lines(path: str) -> list[str]:
    try:
        with open_regular(path) as file:  # a named pipe would block a plain open
            return file.read(MAX_IGNORE_FILE_BYTES).decode("utf-8", "replace").splitlines()
    except OSError:
        return []
