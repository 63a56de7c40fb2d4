"""What the commands say: counts agreed, amounts such as 10k, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from contextwindow.cli import main
from contextwindow.cli._values import Amount, parse_amount

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def chat(tmp_path: Path, *texts: str) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": t} for t in texts]))
    return path


class TestAmounts:
    @given(st.integers(0, 10**9))
    def test_plain_and_separated(self, n: int) -> None:
        """N, N with commas, N with underscores: the same number of tokens."""
        assert parse_amount(str(n)) == Amount(n)
        assert parse_amount(f"{n:,}") == Amount(n)
        assert parse_amount(f"{n:_}") == Amount(n)

    @pytest.mark.parametrize(
        ("text", "tokens"),
        [("10k", 10_000), ("1.5M", 1_500_000), ("2K", 2_000), ("0.5k", 500)],
    )
    def test_suffixes(self, text: str, tokens: int) -> None:
        """k and M scale, in either case."""
        assert parse_amount(text) == Amount(tokens)

    @pytest.mark.parametrize("text", ["-5", "1.5", "10q", "k", "%", "1.0005k", ""])
    def test_refused(self, text: str) -> None:
        """Negative, fractional or unknown amounts are refused."""
        assert parse_amount(text) is None

    @pytest.mark.parametrize(
        "text", ["9007199254740993", "9,007,199,254,740,993", "9_007_199_254_740_993"]
    )
    def test_integers_are_exact(self, text: str) -> None:
        """A count past a float's exact integers (2**53) keeps every digit."""
        assert parse_amount(text) == Amount(9_007_199_254_740_993)
        assert str(parse_amount(text)) == "9,007,199,254,740,993"

    def test_fit_reports_the_exact_budget(self) -> None:
        """fit --budget 9007199254740993 reports that very budget."""
        code, out, _ = run(
            "fit",
            str(EXAMPLE),
            "--budget",
            "9007199254740993",
            "--json",
            "-o",
            "/dev/null",
        )
        assert code == 0
        assert json.loads(out)["budget"] == 9_007_199_254_740_993

    def test_scaled_amounts_are_exact(self) -> None:
        """N.Nk and N.NM are exact too; a fraction of a token is still refused."""
        assert parse_amount("9007199254740.993k") == Amount(9_007_199_254_740_993)
        assert parse_amount("1.0000000000000001M") is None

    @pytest.mark.parametrize("text", ["1" * 5000, "1" * 5000 + "%"], ids=["n", "n%"])
    def test_too_many_digits_is_no_amount(self, text: str) -> None:
        """A number past what Python reads, or a float holds: refused, no crash."""
        assert parse_amount(text) is None

    def test_percent_only_where_allowed(self) -> None:
        """N% is a share where a share is meant, refused elsewhere."""
        assert parse_amount("25%") == Amount(25.0, percent=True)
        assert parse_amount("25%", percent=False) is None

    def test_budget_and_reserve(self) -> None:
        """fit takes --budget 2k and --reserve 25% (of the budget)."""
        code, out, _ = run(
            "fit",
            str(EXAMPLE),
            "--budget",
            "2k",
            "--reserve",
            "25%",
            "--json",
            "-o",
            "/dev/null",
        )
        assert code == 0
        report = json.loads(out)
        assert (report["limit"], report["reserve"], report["budget"]) == (
            2000,
            500,
            1500,
        )


class TestWording:
    def test_over_the_window(self, tmp_path: Path) -> None:
        """Over the window says how far over, not a negative number left."""
        path = chat(tmp_path, "word " * 10_000)
        code, out, _ = run("inspect", str(path), "-m", "gpt-4-0613")
        assert code == 0
        usage = out.splitlines()[-1]
        assert usage.endswith("over the window")
        assert "-" not in usage.split("tokens")[-1]

    def test_singular(self, tmp_path: Path) -> None:
        """One message, one unit: no stray plural."""
        _, out, _ = run("inspect", str(chat(tmp_path, "hi")))
        assert "(openai, 1 message, 1 unit)" in out.splitlines()[0]

    def test_one_conversation_to_choose(self, tmp_path: Path) -> None:
        """A one-conversation file says 0 is the only choice."""
        code, _, err = run("inspect", str(chat(tmp_path, "hi")), "-c", "1")
        assert code == 2
        assert "holds 1 conversation: the only choice is 0" in err
        assert "(s)" not in err


class TestOneLineErrors:
    @pytest.mark.parametrize(
        ("args", "names"),
        [
            (["inspect", str(EXAMPLE), "--top", "-1"], "-1"),
            (["inspect", str(EXAMPLE), "-t", "missing.json"], "no such file"),
            (["inspect", str(EXAMPLE), "-t", "gpt2"], "o200k_base"),
            (["inspect", "missing.json"], "no such file"),
            (["inspect", str(EXAMPLE), "--provider", "x"], "'openai'"),
            (["fit", str(EXAMPLE), "--budget", "lots"], "10k"),
            (["fit", str(EXAMPLE), "--reserve", "lots"], "N%"),
            (["fit", str(EXAMPLE), "--strategy", "nope"], "nope"),
            (["fit", str(EXAMPLE), "--to", "x"], "'anthropic'"),
            (["models", "--limit", "0"], "0"),
            (["report", str(EXAMPLE), "--budget", "1.5"], "1.5"),
            (["export", "nope.db"], "store URL"),
        ],
    )
    def test_one_line_naming_the_value(self, args: list[str], names: str) -> None:
        """A wrong value is one line, naming it and what is accepted (exit 2)."""
        code, out, err = run(*args)
        assert code == 2
        assert out == ""
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("Error: ")
        assert names in lines[0]


class TestPercentInDigits:
    @pytest.mark.parametrize(
        ("value", "shown"),
        [
            (1_000_000.0, "1,000,000%"),
            (1_234_567.0, "1,234,567%"),
            (40.0, "40%"),
            (12.5, "12.5%"),
            (0.5, "0.5%"),
            (0.0000001, "0.0000001%"),
        ],
    )
    def test_never_in_exponent_notation(self, value: float, shown: str) -> None:
        """A share is shown in digits as given, never 1e+06% (nor rounded)."""
        assert str(Amount(value, percent=True)) == shown

    def test_fit_budget_line(self) -> None:
        """fit's budget line writes a large share in digits."""
        code, out, _ = run(
            "fit", str(EXAMPLE), "--budget", "1000000%", "-o", "/dev/null"
        )
        assert code == 0
        assert "(1,000,000% of the conversation's 2,941)" in out
