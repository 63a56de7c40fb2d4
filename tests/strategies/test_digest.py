from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from contextwindow.strategies.digest import (
    DIGEST_MAX_TOKENS,
    DIGEST_MIN_TOKENS,
    PATH_MAX_TOKENS,
    digest,
    digest_tokens,
    is_listing,
    line_span,
    names,
    path_room,
    path_tokens,
)
from contextwindow.strategies.tool_results import held, truncate
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import BPETokenizer

O200K = BPETokenizer("o200k_base")

READ = "\n".join(f"{i:>6}→def step_{i}(): return {i * 1000}" for i in range(1, 401))
"""A numbered ``Read`` of 400 lines, each defining a name and a 4+-digit value."""


class TestNames:
    def test_line_numbers_are_not_names(self) -> None:
        """Read's and cat -n's line numbers are left out; other numbers stay."""
        assert names("   120→port = 8080\n   121\tx") == ["8080"]

    def test_json_keys_come_after_values(self) -> None:
        """A JSON object's keys are its schema: its values are named first."""
        text = '{"user_id": "sofia_kim_7287", "price": 444, "zip_code": "12345"}'
        assert names(text) == ["sofia_kim_7287", "444", "12345", "user_id", "zip_code"]
        assert names("user_id = 444") == ["user_id", "444"]

    def test_line_span(self) -> None:
        """Numbered output gives its first and last line; other text none."""
        assert line_span(READ) == (1, 400)
        assert line_span("a\nb") is None
        assert line_span("   9→a\n   3→b") is None


class TestDigest:
    def test_kept_names_are_left_out(self) -> None:
        """What the marker's text keeps anyway is not named again."""
        assert digest("a/b.py run_all 8080", 10, FakeTokenizer(), kept="a/b.py") == (
            "run_all, 8080"
        )

    def test_sizes(self) -> None:
        """A tenth of the original, at least the minimum, at most the cap."""
        assert digest_tokens(10) == DIGEST_MIN_TOKENS
        assert digest_tokens(10**6) == DIGEST_MAX_TOKENS

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.from_regex(
                r"[a-z]{1,6}_[a-z]{1,6}|[a-z]{1,5}/[a-z]{1,5}\.py|\d{3,6}"
            ).map(str),
            max_size=60,
        ),
        st.integers(0, 80),
    )
    @example(found=["a_a", "a/a.py", "0a/a.py0", "0@0a/aa.py"], cap=17)
    def test_within_its_tokens(self, found: list[str], cap: int) -> None:
        """A digest never takes more than its tokens, and names only what the
        text holds, each once."""
        text = " ".join(found)
        out = digest(text, cap, O200K)
        assert O200K.count(out) <= cap
        shown = out.split(", ") if out else []
        assert len(shown) == len(set(shown))
        assert set(shown) <= set(names(text))


class TestMarkers:
    def test_truncated_read_names_its_lines(self) -> None:
        """A cut Read says which lines went and names what they defined."""
        out = truncate(READ, 200, O200K, handle="0123456789")
        assert out is not None
        marker = next(ln for ln in out.splitlines() if ln.startswith("[... "))
        assert "lines " in marker
        assert "-" in marker
        assert "step_20," in marker  # a name from the middle, in the order met
        assert O200K.count(out) < O200K.count(READ) // 4

    def test_a_cut_line_names_no_piece_of_a_name(self) -> None:
        """One long line (compact JSON) is cut between names, not inside one,
        so the marker's digest names no fragment (``ilable_seats``)."""
        rows = [
            f'{{"flight_number":"HAT{i:03d}","available_seats":{i * 3},'
            f'"price":{100 + i}}}'
            for i in range(60)
        ]
        text = "[" + ",".join(rows) + "]"
        for keep in range(20, 120, 7):
            out = truncate(text, keep, O200K, handle="0123456789")
            assert out is not None
            head, marker, tail = out.split("\n")
            assert text.startswith(head)
            assert text.endswith(tail)
            cut = text[len(head) : len(text) - len(tail)]
            assert not (head[-1:].isalnum() and cut[:1].isalnum())
            assert not (cut[-1:].isalnum() and tail[:1].isalnum())
            named = marker.split(", naming ", 1)[1].split("; recall ", 1)[0]
            assert set(named.split(", ")) <= set(names(text))

    def test_cleared_read(self) -> None:
        """A cleared Read's placeholder gives its lines and names."""
        text = held(READ, O200K)
        assert text.startswith(", lines 1-400, naming step_1, ")
        assert O200K.count(text) <= DIGEST_MAX_TOKENS + 10

    def test_a_cleared_listing_names_all_its_paths(self) -> None:
        """A listing (a Glob's paths) is its paths: its placeholder names them
        all, up to PATH_MAX_TOKENS; a text that only mentions paths gets the
        quarter of its tokens paths get elsewhere."""
        root = "/home/USER/projects/app/priv/repo/migrations"
        paths = [f"{root}/2026021{i:04d}_add_table_{i}.exs" for i in range(12)]
        listing = "\n".join(paths)
        size = O200K.count(listing)
        assert is_listing(listing)
        assert path_room(listing, size) == min(size, PATH_MAX_TOKENS)
        assert path_room(listing, size) > path_tokens(size)
        text = held(listing, O200K)
        assert all(p in text for p in paths)
        prose = "\n".join(
            f"{p} was read: its migration {i} adds a table with two indexes, "
            "which the schema tests check against the models, and a constraint"
            for i, p in enumerate(paths)
        )
        assert not is_listing(prose)
        assert path_room(prose, O200K.count(prose)) == path_tokens(O200K.count(prose))
        assert not all(p in held(prose, O200K) for p in paths)
        huge = "\n".join(f"{root}/x{i}/step_{i}.exs" for i in range(2_000))
        assert (
            O200K.count(held(huge, O200K)) <= PATH_MAX_TOKENS + DIGEST_MAX_TOKENS + 10
        )


class TestScansKept:
    def test_a_long_text_is_scanned_once(self) -> None:
        """A long text's scan is kept: the same one for the same text, or an
        equal one; a short text is scanned each time, with the same names."""
        from contextwindow.strategies.digest import SCAN_MIN_CHARS, scan

        assert len(READ) >= SCAN_MIN_CHARS
        first = scan(READ)
        again = scan("".join(list(READ)))  # equal, another object
        assert again is first
        assert set(first[0]) == set(names(READ))
        short = "see lib/a.ex and Repo.all"
        assert scan(short) is not scan(short)
        assert scan(short) == scan(short)

    def test_kept_scans_are_bounded_by_their_texts(self) -> None:
        """The cache holds texts of at most twice its characters."""
        from contextwindow._lru import Generations

        kept: Generations[str, int] = Generations(10, len)
        for k in range(20):
            kept.put(f"{k:04d}", k)  # four characters each
        assert len(kept) <= 6  # generations of 3 (12 characters), two at most
        assert kept.get("0019") == 19
        assert kept.get("0000") is None
