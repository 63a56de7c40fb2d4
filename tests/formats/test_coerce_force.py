"""``coerce_messages(force=...)`` takes a bool and nothing else."""

from __future__ import annotations

import pytest

from contextwindow import Message
from contextwindow.errors import ArgumentTypeError
from contextwindow.formats._coerce import coerce_messages


class TestForce:
    @pytest.mark.parametrize("bad", ["no", 1, 0, None, "False"])
    def test_refuses_what_is_not_a_bool(self, bad: object) -> None:
        """A truthy str or an int is refused naming ``force``, not read as True."""
        with pytest.raises(ArgumentTypeError, match=r"^force: expected True or False"):
            coerce_messages(
                [{"role": "user", "content": "hi"}],
                provider="openai",
                force=bad,  # type: ignore[arg-type]  # the wrong type is the test
            )

    def test_refused_for_neutral_messages_too(self) -> None:
        """The check runs at entry, before the shortcut for ``Message`` lists."""
        with pytest.raises(ArgumentTypeError, match=r"^force:"):
            coerce_messages([Message.user("hi")], force="yes")  # type: ignore[arg-type]  # the wrong type is the test

    @pytest.mark.parametrize("force", [True, False])
    def test_takes_a_bool(self, force: bool) -> None:
        """True and False read the conversation as before."""
        read = coerce_messages(
            [{"role": "user", "content": "hi"}], provider="openai", force=force
        )
        assert [m.text for m in read.messages] == ["hi"]
        assert read.shape.kind == "openai"
