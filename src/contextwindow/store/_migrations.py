"""The SQL stores' schema, as named migrations applied in order.

Contract:

- ``MIGRATIONS`` only grows: a released migration is never edited, a change
  of schema is a new one. Each is written once, with ``{int}`` and ``{float}``
  for the column types each dialect spells its own way.
- A store applies the missing ones when it opens a database, in one
  transaction, and records each name in ``cw_migrations`` (SQLite also sets
  ``PRAGMA user_version`` to their number). A database holding a migration
  this code does not know was written by a newer contextwindow: opening it
  raises ``StoreError`` instead of guessing.

Example:
    >>> [m.name for m in MIGRATIONS]
    ['0001_log_views_metadata', '0002_counts_in_digest']
    >>> "version BIGINT NOT NULL" in MIGRATIONS[0].statements("postgres")[0]
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from contextwindow.errors import StoreError

__all__ = [
    "COUNTS_IN_DIGEST",
    "MIGRATIONS",
    "TABLE",
    "Dialect",
    "Migration",
    "check_applied",
    "create_table",
]

Dialect = Literal["sqlite", "postgres"]
_TYPES: dict[str, dict[str, str]] = {
    "sqlite": {"int": "INTEGER", "float": "REAL"},
    "postgres": {"int": "BIGINT", "float": "DOUBLE PRECISION"},
}

TABLE = "cw_migrations"
"""Where applied migrations are recorded."""
_CREATE_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} "
    "(name TEXT PRIMARY KEY, applied {float} NOT NULL)"
)


@dataclass(frozen=True, slots=True)
class Migration:
    """One named change of schema."""

    name: str
    """Recorded in ``cw_migrations``; sorts in the order of application."""
    sql: tuple[str, ...]
    """Its statements, with ``{int}`` and ``{float}`` for column types."""

    def statements(self, dialect: Dialect) -> list[str]:
        """The statements in ``dialect``'s words."""
        return [s.format(**_TYPES[dialect]) for s in self.sql]


COUNTS_IN_DIGEST = "0002_counts_in_digest"
"""The migration after which digests cover token counts."""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_log_views_metadata",
        (
            """CREATE TABLE cw_conversations (
                id TEXT PRIMARY KEY,
                version {int} NOT NULL,
                created {float} NOT NULL,
                updated {float} NOT NULL,
                meta TEXT NOT NULL
            )""",
            """CREATE TABLE cw_messages (
                conversation TEXT NOT NULL,
                position {int} NOT NULL,
                id TEXT NOT NULL,
                agent TEXT,
                time {float} NOT NULL,
                tokens TEXT NOT NULL,
                digest TEXT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (conversation, position)
            )""",
            """CREATE TABLE cw_views (
                conversation TEXT PRIMARY KEY,
                version {int} NOT NULL,
                time {float} NOT NULL,
                report TEXT
            )""",
            """CREATE TABLE cw_view_messages (
                conversation TEXT NOT NULL,
                idx {int} NOT NULL,
                ref {int},
                kind TEXT NOT NULL,
                origins TEXT NOT NULL,
                digest TEXT NOT NULL,
                body TEXT,
                PRIMARY KEY (conversation, idx)
            )""",
        ),
    ),
    Migration(
        COUNTS_IN_DIGEST,
        (
            # Digests now cover token counts; older rows' digests cover the
            # body alone, so their counts are dropped (a cache: recounted).
            "UPDATE cw_messages SET tokens = '{{}}' "
            "WHERE tokens <> '{{}}' AND length(digest) = 32",
        ),
    ),
)


def create_table(dialect: Dialect) -> str:
    """The statement that creates ``cw_migrations`` if it is missing."""
    return _CREATE_TABLE.format(**_TYPES[dialect])


def check_applied(
    where: str, applied: Sequence[str], version: int | None = None
) -> int:
    """How many of ``MIGRATIONS`` a database holds; ``StoreError`` if it holds others.

    Args:
        where: The database, for the message.
        applied: The names recorded in it, in order.
        version: SQLite's ``user_version``, when there is one.

    Example:
        >>> check_applied("x.db", ["0001_log_views_metadata"])
        1
        >>> check_applied("x.db", [], version=7)
        Traceback (most recent call last):
        ...
        contextwindow.errors.StoreError: x.db: schema version 7 is newer than ...
    """
    known = [m.name for m in MIGRATIONS]
    if version is not None and version > len(known):
        raise StoreError(
            f"{where}: schema version {version} is newer than this contextwindow "
            f"reads (up to {len(known)}); upgrade contextwindow"
        )
    if list(applied) != known[: len(applied)]:
        unknown = [name for name in applied if name not in known] or list(applied)
        raise StoreError(
            f"{where}: holds schema migration(s) {', '.join(unknown)} that this "
            f"contextwindow does not know (it knows {', '.join(known)}); "
            "upgrade contextwindow"
        )
    return len(applied)
