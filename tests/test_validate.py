from __future__ import annotations

from typing import Any

import pytest

from contextwindow._validate import (
    expect_list,
    expect_mapping,
    expect_str,
    opt_str,
    type_name,
)
from contextwindow.errors import InvalidMessageError


class TestTypeName:
    @pytest.mark.parametrize(
        ("value", "name"),
        [
            (None, "null"),
            (False, "boolean"),
            (2.5, "number"),
            ("x", "string"),
            ({}, "object"),
            ((), "array"),
            ({1}, "set"),
            (b"x", "bytes"),
        ],
    )
    def test_json_words_then_python_names(self, value: object, name: str) -> None:
        """JSON values get JSON's names; anything else its Python type name."""
        assert type_name(value) == name


class TestExpect:
    def test_mapping_and_list_pass_through(self) -> None:
        """A value of the asked type is returned as it is."""
        obj: dict[str, Any] = {"a": 1}
        seq = [1, 2]
        assert expect_mapping(obj, "p") is obj
        assert expect_list(seq, "p") is seq
        assert expect_list((1,), "p") == (1,)
        assert expect_str({"id": "c1"}, "id", "p") == "c1"

    def test_list_rejects_other_types(self) -> None:
        """A non-list names the path and the JSON type found."""
        with pytest.raises(InvalidMessageError) as info:
            expect_list({"a": 1}, "messages")
        assert (info.value.path, info.value.reason) == (
            "messages",
            "expected an array, got object",
        )

    def test_mapping_rejects_other_types(self) -> None:
        """A non-object names the path and the JSON type found."""
        with pytest.raises(
            InvalidMessageError, match=r"^m\[1\]: expected an object, got string$"
        ):
            expect_mapping("hi", "m[1]")

    def test_str_wrong_type(self) -> None:
        """A non-string value names `path.key` and the type found."""
        with pytest.raises(InvalidMessageError) as info:
            expect_str({"id": None}, "id", "m")
        assert (info.value.path, info.value.reason) == (
            "m.id",
            "expected a string, got null",
        )

    def test_str_missing(self) -> None:
        """A missing key is `path.key: missing`."""
        with pytest.raises(InvalidMessageError) as info:
            expect_str({}, "id", "messages[0]")
        assert (info.value.path, info.value.reason) == ("messages[0].id", "missing")

    def test_opt_str(self) -> None:
        """Absent and null give None, a string itself, anything else an error."""
        assert opt_str({}, "name", "p") is None
        assert opt_str({"name": None}, "name", "p") is None
        assert opt_str({"name": "ada"}, "name", "p") == "ada"
        with pytest.raises(InvalidMessageError) as info:
            opt_str({"name": ["ada"]}, "name", "m[1]")
        assert (info.value.path, info.value.reason) == (
            "m[1].name",
            "expected a string, got array",
        )
