"""The bearer token: generated on first start, kept in a 0600 file, checked in constant time."""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...errors import ConfigurationError
from ._settings import TOKEN_ENV, TOKEN_FILE_ENV, ServerSettings, _HTTPError

logger = logging.getLogger("tinyagent.apps.server")

TOKEN_FILE_NAME = "server-token"


def default_token_path() -> Path:
    """Where the server keeps its generated token: ``TINYAGENT_SERVER_TOKEN_FILE`` or the user's config dir."""
    override = os.environ.get(TOKEN_FILE_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("tinyagent")) / TOKEN_FILE_NAME


def load_or_create_token(path: Path | None = None) -> str:
    """The token stored at ``path`` (default :func:`default_token_path`); generated there on first use.

    The file is created with mode 0600 (its folder 0700) and published atomically, so two servers starting at
    once end up with the same token. An existing file that other users can read, or that another user owns, is
    refused: its token may be known to them.

    Raises:
        ConfigurationError: the file cannot be created or read, is empty, or is readable by other users.
    """
    path = default_token_path() if path is None else Path(path)
    try:
        if not path.exists():
            _create_token_file(path)
        _check_private(path)
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigurationError(f"cannot use the server token file {path}: {exc.strerror or exc}") from exc
    if not token:
        raise ConfigurationError(f"the server token file {path} is empty; delete it to generate a new token")
    return token


def _create_token_file(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(secrets.token_urlsafe(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        # link() fails when another process published its token first: then both use that one.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    logger.info("generated a server token in %s (mode 0600)", path)


def _check_private(path: Path) -> None:
    if os.name == "nt":  # POSIX modes do not apply; the file lives in the user's own profile
        return
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ConfigurationError(f"the server token file {path} is not a regular file")
    if info.st_uid != os.getuid():
        raise ConfigurationError(f"the server token file {path} belongs to another user; delete it and start again")
    if info.st_mode & 0o077:
        raise ConfigurationError(
            f"the server token file {path} is readable by other users (mode {stat.S_IMODE(info.st_mode):o}); "
            f"delete it to generate a new token, or run: chmod 600 {path}")


@dataclass(frozen=True)
class ServerAuth:
    """The token a server requires, and where it came from (the token itself never appears in its repr).

    Attributes:
        token: the bearer token; None when authentication is off.
        source: ``argument`` (settings or ``--token``), ``environment`` (``TINYAGENT_SERVER_TOKEN``),
            ``file`` (the generated token file) or ``off`` (``no_auth``).
        path: the token file, for ``source == "file"``.
    """

    token: str | None = field(repr=False)
    source: Literal["argument", "environment", "file", "off"]
    path: Path | None = None

    def describe(self) -> str:
        """One line for the user saying how to authenticate (never the token itself)."""
        if self.token is None:
            return "authentication is OFF (--no-auth): any local process or user can run the agent"
        if self.source == "file":
            return f"bearer token required; it is in {self.path} (send 'Authorization: Bearer <token>')"
        where = "the --token option" if self.source == "argument" else f"${TOKEN_ENV}"
        return f"bearer token required; it is the one given by {where}"

    def check(self, header: str) -> None:
        """Accept an ``Authorization`` header value, or raise a 401.

        Raises:
            _HTTPError: 401 when the header is missing or carries another token.
        """
        if self.token is None:
            return
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
            raise _HTTPError(401, "missing or wrong bearer token; send 'Authorization: Bearer <token>'",
                            "authentication_error", headers={"WWW-Authenticate": "Bearer"})


def resolve_auth(settings: ServerSettings) -> ServerAuth:
    """The token ``settings`` call for: none (``no_auth``), the given one, ``$TINYAGENT_SERVER_TOKEN``, or the file.

    Raises:
        ConfigurationError: the token file cannot be used (see :func:`load_or_create_token`).
    """
    if settings.no_auth:
        return ServerAuth(None, "off")
    if settings.token is not None:
        return ServerAuth(settings.token.strip(), "argument")
    from_env = os.environ.get(TOKEN_ENV, "").strip()
    if from_env:
        return ServerAuth(from_env, "environment")
    path = settings.token_file or default_token_path()
    return ServerAuth(load_or_create_token(path), "file", path)
