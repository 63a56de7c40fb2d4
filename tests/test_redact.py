"""``contextwindow._redact``: URLs and connection strings shown with no secret."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.secret_leaks import leaked

from contextwindow._redact import UNPARSEABLE, display_url, scrub_url, url_secrets

PW = "Sup3rS3cretPassw0rd"


class TestDisplayUrl:
    @pytest.mark.parametrize(
        ("url", "shown"),
        [
            (
                f"postgresql://ada:{PW}@db:5432/chats",
                "postgresql://ada:***@db:5432/chats",
            ),
            (
                f"Postgresql://ada:{PW}@db/chats",
                "Postgresql://ada:***@db/chats",
            ),
            (
                f"postgresql://ada@db/chats?sslmode=require&password={PW}",
                "postgresql://ada@db/chats?sslmode=require&password=***",
            ),
            (
                f"postgresql://ada:x@db/c?sslpassword={PW}",
                "postgresql://ada:***@db/c?sslpassword=***",
            ),
            (
                f"http://127.0.0.1:8000/v1?api-key={PW}&api-version=2",
                "http://127.0.0.1:8000/v1?api-key=***&api-version=2",
            ),
            (f"https://h/v1?KEY={PW}#frag", "https://h/v1?KEY=***#frag"),
            (f"https://h/v1?x-access-token={PW}", "https://h/v1?x-access-token=***"),
            (f"redis://:{PW}@[::1/0", "redis://:***@[::1/0"),
            (f"redis://{PW}@h:6379/0", "redis://***@h:6379/0"),
            (f"unix:///tmp/r.sock?password={PW}", "unix:///tmp/r.sock?password=***"),
            (f"postgresql://ada:Wrong@{PW}@db/c", "postgresql://ada:***@db/c"),
            (f"postgresql://ada:{PW}%zz@db/c", "postgresql://ada:***@db/c"),
            (
                f"host=db port=5432 user=ada password={PW} dbname=c",
                "host=db port=5432 user=ada password=*** dbname=c",
            ),
            (
                f"host=db password = 'a b\\' {PW}' sslpassword={PW}",
                "host=db password = *** sslpassword=***",
            ),
            (f"postgresql+psycopg://ada:{PW}@db/c", "postgresql+psycopg://..."),
            (f"mysql://ada:{PW}@db/c", "mysql://..."),
            ("sqlite:///chats.db#c1", "sqlite:///chats.db#c1"),
            ("postgresql://ada@db/chats", "postgresql://ada@db/chats"),
        ],
    )
    def test_masks(self, url: str, shown: str) -> None:
        """Passwords, secret query values and libpq passwords become ***."""
        assert display_url(url) == shown
        assert not leaked([PW], display_url(url))

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "sk-proj-AbCdEfGh1234567890",
            f"{PW}://x",
            "sk-proj-AbCdEfGh1234567890://x",
            "no url at all",
        ],
    )
    def test_not_a_url(self, text: str) -> None:
        """What is neither a URL nor a keyword/value string is not shown at all."""
        assert display_url(text) == UNPARSEABLE

    @given(st.text())
    def test_never_raises(self, text: str) -> None:
        """Any text at all gets a display form and its secrets, never an error."""
        assert isinstance(display_url(text), str)
        assert isinstance(url_secrets(text), tuple)
        assert isinstance(scrub_url(text, text), str)

    @given(
        st.text(
            st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=8
        ).filter(lambda p: not any(c in p for c in "/?#")),
        st.sampled_from(["postgresql", "redis", "http", "mysql", "sqlite"]),
    )
    def test_userinfo_password_never_shown(self, password: str, scheme: str) -> None:
        """A password in the userinfo never shows, whatever it holds (@ and :)."""
        url = f"{scheme}://ada:{password}@db:5/x?password={quote(password, safe='')}"
        assert password not in display_url(url)
        assert not leaked([password], display_url(url), scrub_url(url, url))


class TestUrlSecrets:
    def test_forms(self) -> None:
        """Each secret as written and percent-decoded."""
        assert url_secrets("redis://:pa%40ss@h/0?token=t0k") == (
            "pa%40ss",
            "pa@ss",
            "t0k",
        )
        assert url_secrets("host=h password='a\\'b'") == ("a'b",)
        assert url_secrets("https://h/v1?api-version=2") == ()


class TestScrubUrl:
    def test_driver_messages(self) -> None:
        """The URL quoted whole, or a piece of its password as a host, is masked."""
        url = f"postgresql://ada:Wrong@{PW}@127.0.0.1:5/p"
        quoted = f'missing "=" after "{url}" in connection info string'
        host = f"failed to resolve host '{PW}@127.0.0.1'"
        assert scrub_url(quoted, url) == (
            'missing "=" after "postgresql://ada:***@127.0.0.1:5/p" in connection '
            "info string"
        )
        assert scrub_url(host, url) == "failed to resolve host '***@127.0.0.1'"

    def test_short_secret_alone_only(self) -> None:
        """A short password is masked where it stands alone, not inside words."""
        assert scrub_url("bad pw: 'pw' for password", "redis://:pw@h/0") == (
            "bad ***: '***' for password"
        )
