"""Helpers shared by the strategy tests."""

from __future__ import annotations

from typing import Any

import pytest

from contextwindow.strategies import _rescan


def full_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stages that scan from scratch (``_rescan._full``) from now on, in order."""
    scans: list[str] = []
    full = _rescan._full

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(args[2])  # the stage's name
        return full(*args, **kwargs)

    monkeypatch.setattr(_rescan, "_full", counted)
    return scans
