from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contextwindow import ArgumentTypeError, Message, StoreError
from contextwindow.store import (
    MemoryStore,
    PostgresStore,
    RedisStore,
    SQLiteStore,
    open_store,
    split_url,
)
from contextwindow.store.urls import is_store_url


class TestOpenStore:
    def test_sqlite_paths(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three slashes: relative to the working folder; four: absolute."""
        monkeypatch.chdir(tmp_path)
        relative = open_store("sqlite:///rel.db")
        absolute = open_store(f"sqlite:///{tmp_path / 'abs.db'}")
        assert isinstance(relative, SQLiteStore)
        assert relative.path == "rel.db"
        assert isinstance(absolute, SQLiteStore)
        assert absolute.path == str(tmp_path / "abs.db")
        relative.append("c", [Message.user("hi")], expected_version=0)
        assert (tmp_path / "rel.db").exists()
        for url in ("sqlite://", "sqlite:///:memory:"):
            opened = open_store(url)
            assert isinstance(opened, SQLiteStore)
            assert opened.path == ":memory:"

    def test_sqlite_options(self) -> None:
        """?synchronous=NORMAL is the one option; others are refused."""
        assert isinstance(
            open_store("sqlite:///:memory:?synchronous=normal"), SQLiteStore
        )
        with pytest.raises(StoreError, match="takes only"):
            open_store("sqlite:///:memory:?cache=shared")
        for url in ("sqlite:///a\0b.db", "sqlite:///a%00b.db"):
            with pytest.raises(StoreError, match="cannot hold a NUL"):
                open_store(url)

    def test_schemes(self, postgres_server: str, redis_server: str) -> None:
        """Each scheme opens its store; the fragment is ignored; Redis takes prefix."""
        assert isinstance(open_store("memory://#c1"), MemoryStore)
        pg = open_store(postgres_server + "#c1")
        assert isinstance(pg, PostgresStore)
        assert isinstance(
            open_store(postgres_server.replace("postgresql", "postgres")), PostgresStore
        )
        rd = open_store(redis_server + "?prefix=app7:#c1")
        assert isinstance(rd, RedisStore)
        assert "app7:" in repr(rd)
        rd.append("c1", [Message.user("hi")], expected_version=0)
        plain = open_store(redis_server)
        assert plain.version("c1") == 0
        assert rd.version("c1") == 1
        for s in (pg, rd, plain):
            s.close()

    def test_unknown_scheme(self) -> None:
        """Anything else lists the schemes it knows."""
        with pytest.raises(
            StoreError, match=r"unknown store URL 'mongodb://\.\.\.'.*sqlite"
        ):
            open_store("mongodb://x")
        assert not is_store_url("chat.json")
        assert is_store_url("SQLITE:///a.db")

    def test_split_url(self) -> None:
        """The fragment is the conversation id, percent-decoded."""
        assert split_url("sqlite:///a.db#c%231") == ("sqlite:///a.db", "c#1")
        assert split_url("sqlite:///a.db#") == ("sqlite:///a.db", None)

    @pytest.mark.parametrize("bad", [None, True, 5, b"sqlite:///a.db"])
    def test_split_url_takes_a_str(self, bad: object) -> None:
        """A URL that is no str is named (not shown: it may hold a password)."""
        with pytest.raises(ArgumentTypeError, match=r"^url: expected a str"):
            split_url(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", [0, 1, None, "yes"])
    def test_readonly_is_a_bool(self, bad: object, tmp_path: Path) -> None:
        """``readonly=0`` or ``None`` is refused, as ``SQLiteStore`` refuses it."""
        for url in ("memory://", f"sqlite:///{tmp_path / 'a.db'}"):
            with pytest.raises(ArgumentTypeError, match=r"^readonly: expected True"):
                open_store(url, readonly=bad)  # type: ignore[arg-type]  # the wrong type on purpose
        assert not (tmp_path / "a.db").exists()

    def test_passwords_stay_out_of_messages(self) -> None:
        """A store's repr, and so its errors, show no password."""
        with pytest.raises(StoreError) as info:
            PostgresStore("postgresql://ada:hunter2@127.0.0.1:9/db", timeout=1)
        assert "hunter2" not in str(info.value)
        assert "ada:***@" in str(info.value)


class TestDrivers:
    def test_importing_contextwindow_imports_no_driver(self) -> None:
        """psycopg and redis are imported when a store is made, not before."""
        code = (
            "import sys, contextwindow, contextwindow.store, contextwindow.cli\n"
            "drivers = ('psycopg', 'psycopg_pool', 'redis')\n"
            "print(sorted(m for m in drivers if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "[]"

    @pytest.mark.parametrize(
        ("modules", "make", "extra"),
        [
            (
                ("psycopg", "psycopg_pool"),
                lambda: PostgresStore("postgresql://x"),
                "postgres",
            ),
            (("redis",), lambda: RedisStore("redis://x"), "redis"),
        ],
    )
    def test_a_missing_driver_says_what_to_install(
        self,
        monkeypatch: pytest.MonkeyPatch,
        modules: tuple[str, ...],
        make: object,
        extra: str,
    ) -> None:
        """Without its driver a store says which extra to install."""
        for name in modules:
            monkeypatch.setitem(sys.modules, name, None)
        with pytest.raises(
            StoreError, match=rf"pip install 'contextwindow\[{extra}\]'"
        ):
            make()  # type: ignore[operator]
