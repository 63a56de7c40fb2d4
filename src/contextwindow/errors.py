"""Every error and warning contextwindow raises.

The hierarchy::

    ContextWindowError
    ├─ ArgumentError                        .argument .got .takes
    │  ├─ ArgumentTypeError(…, TypeError)   wrong type (None, a str as a tokenizer)
    │  └─ ArgumentValueError(…, ValueError) out of range (NaN, -1, unknown name)
    ├─ InvalidMessageError(…, ValueError)   .path .reason     bad input, named location
    ├─ BudgetError                          .budget .required .pinned
    ├─ UnknownModelError(…, KeyError)       only when no default applies
    ├─ StoreError ─ ConflictError           .expected_version .actual_version
    └─ SummarizerError                      .endpoint .status

    UnknownModelWarning(UserWarning)        an unknown model fell back to the default
    ContentDroppedWarning(UserWarning)      content with no equivalent in a shape
    PartialLineWarning(UserWarning)         a JSONL file's last line is cut off

Bad input is reported at the edge (``formats``, ``wire``, transcript readers) with
the exact place, e.g. ``messages[3].tool_calls[0].function.arguments: not valid
JSON``; the core trusts its own types. A bad *argument* to a public call is an
``ArgumentError`` naming it, what it got and what it takes, e.g. ``limit:
expected an int >= 0, got -5``; it is also a ``TypeError`` or a ``ValueError``,
as Python's own checks would be.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BudgetError",
    "ConflictError",
    "ContentDroppedWarning",
    "ContextWindowError",
    "InvalidMessageError",
    "PartialLineWarning",
    "StoreError",
    "SummarizerError",
    "UnknownModelError",
    "UnknownModelWarning",
]


class ContextWindowError(Exception):
    """Base class of every error raised by contextwindow."""


class ArgumentError(ContextWindowError):
    """An argument of a public call is not one it takes.

    Attributes:
        argument: The argument's name, e.g. ``limit`` or ``tools[2]``.
        got: How the value given is shown (a short ``repr``, or only its type
            for a secret).
        takes: What the argument takes, e.g. ``an int >= 0``.

    Example:
        >>> from contextwindow import fit
        >>> try:
        ...     fit([], limit=-5)
        ... except ArgumentError as exc:
        ...     print(exc, isinstance(exc, ValueError))
        limit: expected an int >= 0, got -5 True
    """

    def __init__(self, argument: str, got: str, takes: str, hint: str = "") -> None:
        self.argument = argument
        self.got = got
        self.takes = takes
        more = f" ({hint})" if hint else ""
        super().__init__(f"{argument}: expected {takes}, got {got}{more}")


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type: ``None``, a float for an int, a ``str``."""


class ArgumentValueError(ArgumentError, ValueError):
    """An argument of the right type but out of range: NaN, a negative count."""


class InvalidMessageError(ContextWindowError, ValueError):
    """A message (or transcript record) is malformed.

    Attributes:
        path: Where the fault is, e.g. ``messages[3].tool_calls[0].id``.
        reason: What is wrong there, e.g. ``missing``.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class BudgetError(ContextWindowError):
    """The content that must be kept does not fit the budget on its own.

    Attributes:
        budget: The token budget asked for.
        required: Tokens that cannot be removed.
        pinned: Human-readable descriptions of what could not be removed.
    """

    def __init__(
        self, budget: int, required: int, pinned: tuple[str, ...] = ()
    ) -> None:
        self.budget = budget
        self.required = required
        self.pinned = pinned
        what = "; ".join(pinned) if pinned else "pinned content"
        super().__init__(
            f"cannot fit {required:,} tokens into a budget of {budget:,}: {what}"
        )


class UnknownModelError(ContextWindowError, KeyError):
    """A model is not in the registry and no default was allowed."""

    def __init__(self, model: str, suggestions: tuple[str, ...] = ()) -> None:
        self.model = model
        self.suggestions = suggestions
        hint = f" (did you mean {', '.join(suggestions)}?)" if suggestions else ""
        super().__init__(f"unknown model {model!r}{hint}")

    def __str__(self) -> str:
        # KeyError.__str__ would wrap the message in quotes.
        return str(self.args[0])


class StoreError(ContextWindowError):
    """A store failed to read or write, or found data it cannot trust."""


class ConflictError(StoreError):
    """An append named a version that is no longer current.

    Attributes:
        expected_version: The version the writer expected.
        actual_version: The version the store holds.
    """

    def __init__(self, expected_version: int, actual_version: int) -> None:
        self.expected_version = expected_version
        self.actual_version = actual_version
        super().__init__(
            f"expected version {expected_version}, store is at {actual_version}"
        )


class SummarizerError(ContextWindowError):
    """A summarizer could not produce a summary.

    Attributes:
        endpoint: The URL that failed, for an LLM summarizer (``None`` else).
        status: The HTTP status it answered, when it answered (``None`` for a
            timeout or a connection error).
    """

    def __init__(
        self, message: str, *, endpoint: str | None = None, status: int | None = None
    ) -> None:
        self.endpoint = endpoint
        self.status = status
        super().__init__(message)


class UnknownModelWarning(UserWarning):
    """A model is not in the registry; a documented default was used."""


class ContentDroppedWarning(UserWarning):
    """Content was written to a provider's shape that has no equivalent for it.

    An ``Opaque`` part of another provider (a file id, a server tool block)
    is left out of the request rather than sent in a shape the provider
    would refuse; the warning names the message and part.
    """


class PartialLineWarning(UserWarning):
    """The last line of a JSON Lines transcript is cut off, and was left out.

    A transcript still being written (a live Claude Code session) ends in a
    line its writer has not finished: the lines before it are read.
    """
