from __future__ import annotations

import contextwindow


class TestExports:
    def test_all_is_sorted_and_unique(self) -> None:
        """`__all__` is one sorted list without repeats."""
        names = contextwindow.__all__
        assert names == sorted(names)
        assert len(names) == len(set(names))

    def test_every_name_exists(self) -> None:
        """Every exported name is importable from the package."""
        for name in contextwindow.__all__:
            assert hasattr(contextwindow, name), name

    def test_public_members_are_exported(self) -> None:
        """Every public object the package defines at top level is in `__all__`."""
        public = {
            name
            for name, value in vars(contextwindow).items()
            if not name.startswith("_")
            and getattr(value, "__module__", "").startswith("contextwindow")
        }
        assert public <= set(contextwindow.__all__)

    def test_version_matches_metadata(self) -> None:
        """`__version__` is the installed distribution's version."""
        from importlib.metadata import version

        assert contextwindow.__version__ == version("contextwindow")
