"""The embedded model's download against a loopback HTTP server that serves a file the way Hugging
Face's ``resolve`` URLs do (Range requests, redirects): progress, resume after a dropped
connection, checksum mismatch, disk full, offline, an HTTP error; and ``LOCAL_MODEL`` parsing."""

from __future__ import annotations

import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rag.local.download import DEFAULT_MODEL, DownloadError, ModelSpec, download, parse_model

BLOB = bytes(range(256)) * 4096 * 3  # 3 MiB: a few chunks


class _Server:
    def __init__(self) -> None:
        self.blob = BLOB
        self.drop_after: int | None = None  # close the connection after this many bytes (once)
        self.status: int | None = None  # answer every request with this status
        self.ranges: list[str | None] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                outer.paths.append(self.path)
                if "/resolve/" in self.path and not self.path.startswith("/cdn"):  # like the Hub: a redirect
                    self.send_response(302)
                    self.send_header("Location", "/cdn" + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if outer.status is not None:
                    self.send_response(outer.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                header = self.headers.get("Range")
                outer.ranges.append(header)
                start = int(header.split("=")[1].split("-")[0]) if header else 0
                body = outer.blob[start:]
                self.send_response(206 if header else 200)
                self.send_header("Content-Length", str(len(body)))
                if header:
                    self.send_header("Content-Range", f"bytes {start}-{len(outer.blob) - 1}/{len(outer.blob)}")
                self.end_headers()
                if outer.drop_after is not None:
                    cut, outer.drop_after = outer.drop_after, None
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.connection.shutdown(2)  # the connection drops mid-file
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = _Server()
    yield srv
    srv.close()


def _spec(**changes: object) -> ModelSpec:
    fields = {"repo": "owner/tiny-GGUF", "filename": "tiny.gguf", "revision": "abc123",
              "sha256": hashlib.sha256(BLOB).hexdigest(), "size": len(BLOB), **changes}
    return ModelSpec(**fields)  # type: ignore[arg-type]


def test_downloads_with_progress_and_checks_the_file(server, tmp_path):
    seen: list[tuple[int, int]] = []
    path = download(_spec(), tmp_path / "models", endpoint=server.url, progress=lambda d, t: seen.append((d, t)))
    assert path == tmp_path / "models" / "tiny.gguf" and path.read_bytes() == BLOB
    assert not (tmp_path / "models" / "tiny.gguf.part").exists()
    assert seen[0] == (0, len(BLOB)) and seen[-1] == (len(BLOB), len(BLOB))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) > 2
    assert server.paths[0] == "/owner/tiny-GGUF/resolve/abc123/tiny.gguf"  # the Hub's URL shape, the pinned revision
    again = download(_spec(), tmp_path / "models", endpoint=server.url)  # already there: no request
    assert again == path and len(server.paths) == 2


def test_a_dropped_connection_is_resumed_where_it_stopped(server, tmp_path):
    server.drop_after = len(BLOB) // 3
    with pytest.raises(DownloadError) as first:
        download(_spec(), tmp_path, endpoint=server.url)
    assert first.value.msg.code == "local.offline"
    part = tmp_path / "tiny.gguf.part"
    kept = part.stat().st_size
    assert 0 < kept < len(BLOB) and not (tmp_path / "tiny.gguf").exists()
    path = download(_spec(), tmp_path, endpoint=server.url)
    assert path.read_bytes() == BLOB
    assert server.ranges == [None, f"bytes={kept}-"]  # the second try asked only for the rest


def test_a_file_that_is_not_the_pinned_one_is_removed(server, tmp_path):
    with pytest.raises(DownloadError) as caught:
        download(_spec(sha256="0" * 64), tmp_path, endpoint=server.url)
    assert caught.value.msg.code == "local.checksum" and "tiny.gguf" in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # neither the file nor a .part to resume from
    with pytest.raises(DownloadError) as short:
        download(_spec(size=len(BLOB) + 1), tmp_path, endpoint=server.url)
    assert short.value.msg.code == "local.checksum"


def test_offline_and_http_errors_are_one_clear_line(server, tmp_path):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(DownloadError) as offline:
        download(_spec(), tmp_path, endpoint=closed, timeout=2)
    assert offline.value.msg.code == "local.offline" and "HF_ENDPOINT" in str(offline.value)
    server.status = 404
    with pytest.raises(DownloadError) as missing:
        download(_spec(), tmp_path, endpoint=server.url)
    assert missing.value.msg.code == "local.http_status" and "404" in str(missing.value)
    assert str(tmp_path) not in str(offline.value) + str(missing.value)  # no server path in what people read


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_said_as_such(server, tmp_path):
    (tmp_path / "tiny.gguf.part").symlink_to("/dev/full")  # every write fails with ENOSPC
    with pytest.raises(DownloadError) as caught:
        download(_spec(), tmp_path, endpoint=server.url)
    assert caught.value.msg.code == "local.disk_full"


def test_a_cancelled_download_stops_and_can_be_resumed(server, tmp_path):
    calls = {"n": 0}

    def cancelled() -> bool:
        calls["n"] += 1
        return calls["n"] > 1

    with pytest.raises(DownloadError) as caught:
        download(_spec(), tmp_path, endpoint=server.url, cancelled=cancelled)
    assert caught.value.msg.code == "local.cancelled"
    assert download(_spec(), tmp_path, endpoint=server.url).read_bytes() == BLOB


def test_local_model_names_parse_to_a_repo_a_file_and_a_pin():
    assert parse_model(None) is DEFAULT_MODEL and parse_model("default") is DEFAULT_MODEL
    assert DEFAULT_MODEL.sha256 and len(DEFAULT_MODEL.sha256) == 64 and len(DEFAULT_MODEL.revision) == 40
    spec = parse_model("bartowski/Qwen2.5-3B-Instruct-GGUF/Qwen2.5-3B-Instruct-Q4_K_M.gguf")
    assert (spec.repo, spec.filename, spec.revision, spec.sha256) == (
        "bartowski/Qwen2.5-3B-Instruct-GGUF", "Qwen2.5-3B-Instruct-Q4_K_M.gguf", "main", None)
    pinned = parse_model("a/b:c.gguf@0123abc#" + "A" * 64)
    assert (pinned.repo, pinned.filename, pinned.revision, pinned.sha256) == ("a/b", "c.gguf", "0123abc", "a" * 64)
    assert pinned.url("https://hf-mirror.com/") == "https://hf-mirror.com/a/b/resolve/0123abc/c.gguf"
    for bad in ("just-a-name", "a/b/c.bin", "a/b/c.gguf#123", "../x/y.gguf"):
        with pytest.raises(DownloadError) as caught:
            parse_model(bad)
        assert caught.value.msg.code == "local.bad_model"


def test_a_part_file_longer_than_the_model_starts_again(server, tmp_path: Path):
    (tmp_path / "tiny.gguf.part").write_bytes(b"x" * (len(BLOB) + 10))
    assert download(_spec(), tmp_path, endpoint=server.url).read_bytes() == BLOB
