"""The proxy's settings show no secret: its repr, and the command's errors."""

from __future__ import annotations

from click.testing import CliRunner
from tests.secret_leaks import leaked

from contextwindow.cli import main
from contextwindow.proxy import ProxyConfig

PW = "Sup3rS3cretPassw0rd"
KEY = "sk-proj-AbCdEfGh1234567890XyZwVuTsRq"
PROXY_KEY = "pr0xyKeyAbcdef123456"


class TestProxyConfig:
    def test_repr(self) -> None:
        """No api_key; upstream and store URLs in their display form."""
        config = ProxyConfig(
            upstream_openai=f"http://user:{PW}@127.0.0.1:9/v1?api-key={KEY}",
            upstream_anthropic=f"https://u:{PW}@anthropic.example",
            store=f"postgresql://ada:{PW}@db/chats?sslpassword={PW}",
            api_key=PROXY_KEY,
        )
        shown = repr(config)
        assert not leaked([PW, KEY, PROXY_KEY], shown), shown
        assert "store='postgresql://ada:***@db/chats?sslpassword=***'" in shown
        assert "upstream_openai='http://user:***@127.0.0.1:9/v1?api-key=***'" in shown
        assert "max_concurrency=64" in shown


class TestProxyCommand:
    def test_key_given_as_its_variable(self) -> None:
        """--api-key-env "$KEY" is refused without echoing the key."""
        for args in (["--api-key-env", KEY], ["--api-key-env", KEY, "--json"]):
            result = CliRunner().invoke(main, ["proxy", *args])
            assert result.exit_code == 2
            assert "--api-key-env" in result.output
            assert not leaked([KEY], result.output), result.output

    def test_store_password(self) -> None:
        """A store that cannot be opened is named with its password masked."""
        for store in (
            f"postgresql://ada@127.0.0.1:9/postgres?password={PW}",
            f"Postgresql://ada:{PW}@[::1/postgres",
            f"redis://:{PW}@[::1/0",
        ):
            result = CliRunner().invoke(main, ["proxy", "--store", store, "--json"])
            assert result.exit_code == 1, result.output
            assert not isinstance(result.exception, ValueError)
            assert not leaked([PW], result.output), result.output
