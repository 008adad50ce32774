"""The embedded model's file: which one (``ModelSpec``, pinned by SHA-256), where it comes from (a
Hugging Face repo, or ``HF_ENDPOINT``'s mirror), and its download: streamed to ``<file>.part``,
resumed from there with an HTTP Range request, checked against the pinned size and SHA-256, then
renamed into place. Failures raise ``DownloadError`` with a message code (offline, HTTP status, disk
full, checksum), never a traceback or the server's path."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx

from rag.errors import DISK_FULL_ERRNOS, RagError
from rag.i18n import Msg

logger = logging.getLogger(__name__)

#: ``progress(done_bytes, total_bytes)``; total is 0 when the server does not say.
Progress = Callable[[int, int], None]
CHUNK = 1 << 20
HF_DEFAULT_ENDPOINT = "https://huggingface.co"


class DownloadError(RagError):
    """The model file could not be fetched or checked (``.msg`` says why, for people)."""


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF file in a Hugging Face repo. ``revision`` pins a commit; ``sha256`` and ``size``, when
    known, are checked after the download (a file under another name is checked if given them)."""

    repo: str
    filename: str
    revision: str = "main"
    sha256: str | None = None
    size: int | None = None

    @property
    def name(self) -> str:
        """The model's short name, as the banner shows it (the file name without ``.gguf``)."""
        return re.sub(r"\.gguf$", "", self.filename, flags=re.IGNORECASE)

    def url(self, endpoint: str | None = None) -> str:
        base = (endpoint or HF_DEFAULT_ENDPOINT).rstrip("/")
        return f"{base}/{self.repo}/resolve/{quote(self.revision, safe='')}/{quote(self.filename)}"


#: The default: Qwen2.5-1.5B-Instruct (Apache-2.0) at Q4_K_M, 1.04 GiB, pinned to a commit.
DEFAULT_MODEL = ModelSpec(
    repo="Qwen/Qwen2.5-1.5B-Instruct-GGUF",
    filename="qwen2.5-1.5b-instruct-q4_k_m.gguf",
    revision="91cad51170dc346986eccefdc2dd33a9da36ead9",
    sha256="6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
    size=1117320736,
)
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def parse_model(value: str | None) -> ModelSpec:
    """``LOCAL_MODEL``: unset or "default" gives ``DEFAULT_MODEL``; else ``owner/repo/file.gguf``
    or ``owner/repo:file.gguf``, optionally ``@revision`` and ``#sha256``. Raises ``DownloadError``
    (code ``local.bad_model``) for anything else."""
    text = (value or "").strip()
    if not text or text.lower() == "default":
        return DEFAULT_MODEL
    sha = None
    if "#" in text:
        text, sha = text.split("#", 1)
        if not re.fullmatch(r"[0-9a-fA-F]{64}", sha):
            raise DownloadError(Msg.of("local.bad_model", level="error", value=value))
    revision = "main"
    if "@" in text:
        text, revision = text.rsplit("@", 1)
    if ":" in text:
        repo, filename = text.split(":", 1)
    else:
        repo, _, filename = text.rpartition("/")
    if not _REPO.match(repo) or not filename.lower().endswith(".gguf") or "/" in filename or not revision:
        raise DownloadError(Msg.of("local.bad_model", level="error", value=value))
    if repo == DEFAULT_MODEL.repo and filename == DEFAULT_MODEL.filename and revision in ("main", DEFAULT_MODEL.revision):
        return DEFAULT_MODEL if sha is None else ModelSpec(repo, filename, DEFAULT_MODEL.revision, sha.lower())
    return ModelSpec(repo, filename, revision, sha.lower() if sha else None)


def hub_cache_file(spec: ModelSpec) -> Path | None:
    """``spec``'s file in the Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME``/hub or
    ~/.cache/huggingface/hub), where a Space's ``preload_from_hub`` and ``huggingface-cli download``
    put it; only at the pinned revision. None when it is not there."""
    root = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub")
    path = Path(root) / f"models--{spec.repo.replace('/', '--')}" / "snapshots" / spec.revision / spec.filename
    return path if path.is_file() else None


def sha256_of(path: Path, chunk: int = CHUNK) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _disk_full(exc: OSError) -> bool:
    return exc.errno in DISK_FULL_ERRNOS


def _check(spec: ModelSpec, path: Path) -> None:
    size = path.stat().st_size
    if spec.size is not None and size != spec.size:
        raise DownloadError(Msg.of("local.checksum", level="error", name=spec.filename))
    if spec.sha256 is not None and sha256_of(path) != spec.sha256.lower():
        raise DownloadError(Msg.of("local.checksum", level="error", name=spec.filename))


def download(spec: ModelSpec, dest_dir: Path, *, endpoint: str | None = None, progress: Progress | None = None,
             timeout: float = 30.0, cancelled: Callable[[], bool] | None = None,
             client: httpx.Client | None = None) -> Path:
    """``spec``'s file in ``dest_dir`` (downloaded unless already there and checked). A ``.part``
    left by an earlier try is resumed. Raises ``DownloadError``."""
    dest_dir = Path(dest_dir)
    target = dest_dir / spec.filename
    if target.is_file():
        return target
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(Msg.of("local.disk_full" if _disk_full(exc) else "local.cannot_write",
                                   level="error")) from exc
    part = target.with_name(target.name + ".part")
    own = client is None
    http = client or httpx.Client(timeout=httpx.Timeout(timeout, read=timeout), follow_redirects=True)
    try:
        _fetch(spec, part, http, spec.url(endpoint), progress, cancelled)
    finally:
        if own:
            http.close()
    try:
        _check(spec, part)
    except DownloadError:
        part.unlink(missing_ok=True)  # a wrong file is not resumed from next time
        raise
    os.replace(part, target)
    logger.info("model file ready: %s", spec.filename)
    return target


def _fetch(spec: ModelSpec, part: Path, http: httpx.Client, url: str, progress: Progress | None,
           cancelled: Callable[[], bool] | None) -> None:
    have = part.stat().st_size if part.is_file() else 0
    if spec.size is not None and have == spec.size:
        return
    if spec.size is not None and have > spec.size:
        part.unlink()
        have = 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with http.stream("GET", url, headers=headers) as resp:
            if resp.status_code == 416 and have:  # nothing left to send: the .part is whole (checked next)
                return
            if resp.status_code not in (200, 206):
                raise DownloadError(Msg.of("local.http_status", level="error", status=resp.status_code))
            if resp.status_code == 200:
                have = 0  # the server ignored the Range: start again
            length = int(resp.headers.get("content-length") or 0)
            total = spec.size or (have + length if length else 0)
            done = have
            if progress:
                progress(done, total)
            with part.open("ab" if have else "wb") as fh:
                for block in resp.iter_bytes(CHUNK):
                    if cancelled is not None and cancelled():
                        raise DownloadError(Msg.of("local.cancelled", level="warning"))
                    fh.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
    except DownloadError:
        raise
    except OSError as exc:
        if _disk_full(exc):
            raise DownloadError(Msg.of("local.disk_full", level="error")) from exc
        if isinstance(exc, (ConnectionError, TimeoutError)):
            raise DownloadError(Msg.of("local.offline", level="error")) from exc
        raise DownloadError(Msg.of("local.cannot_write", level="error")) from exc
    except httpx.HTTPError as exc:  # no connection, no such host, a read that stalled
        logger.warning("model download failed: %s", type(exc).__name__)
        raise DownloadError(Msg.of("local.offline", level="error")) from exc
