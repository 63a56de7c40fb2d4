"""No piece of a store URL's password in an error, a repr, a log or the CLI.

DESIGN's invariant, for the secrets a store URL holds however it holds
them: ``user:pass@``, ``?password=``, ``?sslpassword=``, a libpq
``password=`` keyword, a URL the driver cannot parse (it quotes the URL) or
splits elsewhere (it shows a piece of the password as a host name). Each
error is checked whole: its text, repr, args, formatted traceback and every
exception chained to it or kept as its context; so is every log record at
DEBUG and everything the CLI prints.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.secret_leaks import exception_text, leaked

from contextwindow import ContextManager, Message, StoreError
from contextwindow.cli import main
from contextwindow.store import PostgresStore, RedisStore, open_store

from .conftest import make_backend

PW = "Sup3rS3cretPassw0rd"
KEY = "sk-proj-AbCdEfGh1234567890XyZwVuTsRq"

# Nothing listens on port 9 (discard): each fails before any password is sent.
FAILING = {
    "upper-case scheme": f"Postgresql://ada:{PW}@127.0.0.1:9/postgres",
    "bad percent-encoding": f"postgresql://ada:{PW}%zz@127.0.0.1:9/postgres",
    "@ in the password": f"postgresql://ada:Wrong@{PW}@127.0.0.1:9/postgres",
    "broken IPv6 host": f"postgresql://ada:{PW}@[::1/postgres",
    "query password": f"postgresql://ada@127.0.0.1:9/postgres?password={PW}",
    "query password, bad option": (
        f"postgresql://ada@127.0.0.1:9/postgres?password={PW}&foo=bar"
    ),
    "sslpassword": f"postgresql://ada:x@127.0.0.1:9/postgres?sslpassword={PW}",
    "keyword/value": f"host=127.0.0.1 port=9 user=ada dbname=postgres password={PW}",
    "keyword/value, bad option": f"host=127.0.0.1 port=9 password={PW} foo=bar",
    "redis broken IPv6 host": f"redis://:{PW}@[::1/0",
    "redis bad port": f"redis://:{PW}@127.0.0.1:notaport/0",
    "redis bad option": f"redis://:{PW}@127.0.0.1:9/0?socket_timeout=abc",
    "redis query password": f"redis://127.0.0.1:9/0?password={PW}",
    "redis password as user": f"redis://{PW}@127.0.0.1:9/0",
}


def _open(url: str) -> object:
    if url.startswith("redis"):
        return RedisStore(url, timeout=1)
    return PostgresStore(url, timeout=1)


class TestFailingStores:
    @pytest.mark.parametrize("url", FAILING.values(), ids=FAILING.keys())
    def test_error_holds_no_password(
        self, url: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A ``StoreError`` (never a raw ``ValueError``) with no piece of it."""
        caplog.set_level(logging.DEBUG)
        with pytest.raises(StoreError) as info:
            _open(url)
        assert not leaked([PW], exception_text(info.value), caplog.text)
        assert "cannot connect to" in str(info.value)

    @pytest.mark.parametrize("url", FAILING.values(), ids=FAILING.keys())
    def test_open_store_too(self, url: str, caplog: pytest.LogCaptureFixture) -> None:
        """``open_store`` names the same stores (or refuses the URL) cleanly."""
        caplog.set_level(logging.DEBUG)
        with pytest.raises(StoreError) as info:
            open_store(url)
        assert not leaked([PW], exception_text(info.value), caplog.text)

    def test_driver_message_kept(self) -> None:
        """What the driver said stays, with the password's piece masked."""
        with pytest.raises(StoreError) as info:
            _open(FAILING["@ in the password"])
        assert "failed to resolve host '***@127.0.0.1'" in str(info.value)
        assert "PostgresStore('postgresql://ada:***@127.0.0.1:9/postgres')" in str(
            info.value
        )


class TestLiveStores:
    def test_postgres_reprs(self, postgres_server: str) -> None:
        """A password given any way shows in no repr (the server trusts loopback)."""
        host, port = postgres_server.split("@", 1)[1].split("/", 1)[0].split(":")
        urls = [
            postgres_server.replace("postgres@", f"postgres:{PW}@"),
            postgres_server.replace("postgresql://", "Postgresql://").replace(
                "postgres@", f"postgres:{PW}@"
            ),
            f"{postgres_server}?password={PW}&sslpassword={PW}",
            f"host={host} port={port} user=postgres dbname=postgres password={PW}",
            f"host={host} port={port} user=postgres dbname=postgres "
            f"password='{PW} \\' x'",
        ]
        for url in urls:
            store = PostgresStore(url, timeout=5)
            try:
                assert not leaked([PW], repr(store)), repr(store)
                assert "***" in repr(store)
            finally:
                store.close()

    def test_redis_reprs(self, redis_server: str) -> None:
        """A Redis password, in the userinfo or the query, shows in no repr."""
        for url in (
            redis_server.replace("redis://", f"redis://:{PW}@"),
            f"{redis_server}?password={PW}",
        ):
            store = open_store(url + "&prefix=p:" if "?" in url else url)
            try:
                assert not leaked([PW], repr(store)), repr(store)
                assert "***" in repr(store)
            finally:
                store.close()


class TestOpenStore:
    def test_unknown_scheme_shows_only_the_scheme(self) -> None:
        """A URL of a scheme no store reads is shown as its scheme alone."""
        with pytest.raises(StoreError) as info:
            open_store(f"postgresql+psycopg://ada:{PW}@db/chats")
        assert "'postgresql+psycopg://...'" in str(info.value)
        assert not leaked([PW], exception_text(info.value))

    def test_a_key_passed_as_the_store(self) -> None:
        """A key given as ``store=`` by mistake is not echoed."""
        with pytest.raises(StoreError) as info:
            open_store(KEY)
        assert "not a store URL" in str(info.value)
        assert not leaked([KEY], exception_text(info.value))
        with pytest.raises(StoreError) as info:
            ContextManager("gpt-4o", store=KEY)
        assert not leaked([KEY], exception_text(info.value))

    def test_sqlite_option_error(self) -> None:
        """The sqlite URL a bad option is refused in shows its query masked."""
        with pytest.raises(StoreError) as info:
            open_store(f"sqlite:///chats.db?password={PW}")
        assert "'sqlite:///chats.db?password=***'" in str(info.value)
        assert not leaked([PW], exception_text(info.value))

    def test_unix_socket_with_prefix(self, tmp_path: Path) -> None:
        """``unix:///path?prefix=`` reaches RedisStore as unix:///path."""
        sock = tmp_path / "r.sock"
        with pytest.raises(StoreError, match="cannot connect to") as info:
            open_store(f"unix://{sock}?prefix=p:")
        assert f"RedisStore('unix://{sock}')[prefix 'p:']" in str(info.value)


class TestCommands:
    """The CLI shows a store URL only in its display form."""

    @pytest.fixture
    def url(self, request: pytest.FixtureRequest, tmp_path: Path) -> str:
        backend = make_backend("postgres", request, tmp_path)
        url = backend.url.replace("postgres@", f"postgres:{PW}@")
        store = open_store(url)
        try:
            for cid in ("c1", "c2"):
                store.append(
                    cid,
                    [Message.user(f"hello from {cid}"), Message.assistant("ok")],
                    expected_version=0,
                )
        finally:
            store.close()
        return url

    def test_no_command_echoes_the_password(self, url: str, tmp_path: Path) -> None:
        """Listings, headers, JSON, progress and errors all mask it."""
        html = str(tmp_path / "r.html")
        runs = [
            ["inspect", url],
            ["inspect", url, "--json"],
            ["inspect", url, "-c", "9"],
            ["inspect", url, "-c", "9", "--json"],
            ["fit", url, "--budget", "50"],
            ["fit", url, "-c", "0", "--budget", "50", "--json"],
            ["export", url],
            ["export", url, "--json"],
            ["export", url + "#c1", "--json"],
            ["export", url + "#nope"],
            ["report", url, "-o", html],
            ["report", url, "-c", "7", "-o", html],
            ["export", f"mysql://ada:{PW}@db/chats"],
            ["inspect", f"mysql://ada:{PW}@db/chats"],
            ["export", f"redis://:{PW}@[::1/0"],
            ["inspect", f"redis://:{PW}@[::1/0#c1", "--json"],
        ]
        for args in runs:
            result = CliRunner().invoke(main, args)
            if result.exception is not None:
                assert isinstance(result.exception, SystemExit), args
            assert not leaked([PW], result.output), (args, result.output)
        listing = CliRunner().invoke(main, ["export", url])
        assert "postgres:***@" in listing.output
