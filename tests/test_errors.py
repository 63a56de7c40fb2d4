from __future__ import annotations

import pytest

from contextwindow.errors import (
    BudgetError,
    ConflictError,
    ContextWindowError,
    InvalidMessageError,
    StoreError,
    SummarizerError,
    UnknownModelError,
    UnknownModelWarning,
)


class TestHierarchy:
    @pytest.mark.parametrize(
        "cls",
        [
            InvalidMessageError,
            BudgetError,
            UnknownModelError,
            StoreError,
            ConflictError,
            SummarizerError,
        ],
    )
    def test_every_error_is_a_context_window_error(self, cls: type) -> None:
        """One `except ContextWindowError` catches every error the library raises."""
        assert issubclass(cls, ContextWindowError)

    def test_builtin_bases_for_callers_that_catch_those(self) -> None:
        """Bad input is a ValueError, an unknown model a KeyError, and so on."""
        assert issubclass(InvalidMessageError, ValueError)
        assert issubclass(UnknownModelError, KeyError)
        assert issubclass(ConflictError, StoreError)
        assert issubclass(UnknownModelWarning, UserWarning)
        assert not issubclass(UnknownModelWarning, ContextWindowError)


class TestInvalidMessageError:
    def test_path_and_reason(self) -> None:
        """The message is `path: reason`, and both are kept as attributes."""
        exc = InvalidMessageError("messages[3].tool_call_id", "missing")
        assert (exc.path, exc.reason) == ("messages[3].tool_call_id", "missing")
        assert str(exc) == "messages[3].tool_call_id: missing"


class TestBudgetError:
    def test_names_what_is_pinned(self) -> None:
        """The pinned descriptions are joined into the message and kept."""
        exc = BudgetError(100, 250, ("system prompt", "message 3 (pinned)"))
        assert (exc.budget, exc.required) == (100, 250)
        assert exc.pinned == ("system prompt", "message 3 (pinned)")
        assert str(exc) == (
            "cannot fit 250 tokens into a budget of 100: "
            "system prompt; message 3 (pinned)"
        )

    def test_without_descriptions(self) -> None:
        """With nothing named, the message says `pinned content`."""
        exc = BudgetError(10, 20)
        assert exc.pinned == ()
        assert str(exc) == "cannot fit 20 tokens into a budget of 10: pinned content"

    def test_large_figures_are_grouped(self) -> None:
        """Figures are written as every other count is, with thousands separated."""
        exc = BudgetError(1_000, 12_730)
        assert str(exc).startswith("cannot fit 12,730 tokens into a budget of 1,000:")


class TestUnknownModelError:
    def test_str_is_not_quoted_like_a_key_error(self) -> None:
        """str() is the plain message with suggestions, unlike KeyError's repr."""
        exc = UnknownModelError("gpt-4x", ("gpt-4o", "gpt-4"))
        assert str(exc) == "unknown model 'gpt-4x' (did you mean gpt-4o, gpt-4?)"
        assert (exc.model, exc.suggestions) == ("gpt-4x", ("gpt-4o", "gpt-4"))

    def test_without_suggestions(self) -> None:
        """No suggestions means no hint."""
        assert str(UnknownModelError("zzz")) == "unknown model 'zzz'"


class TestConflictError:
    def test_versions(self) -> None:
        """Both versions are kept and named in the message."""
        exc = ConflictError(3, 5)
        assert (exc.expected_version, exc.actual_version) == (3, 5)
        assert str(exc) == "expected version 3, store is at 5"
        with pytest.raises(StoreError, match="store is at 5"):
            raise exc
