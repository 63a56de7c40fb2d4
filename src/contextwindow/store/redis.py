"""``RedisStore``: conversations in Redis, for many workers (redis-py).

Contract:

- Needs ``pip install 'contextwindow[redis]'`` (redis-py), imported when a
  store is made; without it the constructor raises ``StoreError`` saying what
  to install. One Redis server (a primary, with replicas if you like); not
  Redis Cluster, since one conversation's keys must sit together.
- Every write is one Lua script: Redis runs it alone, so the version check
  and the rows of an append are atomic, and a client killed while sending it
  leaves nothing (the server runs a script only once it has all of it).
- Reads are one ``MULTI``/``EXEC`` transaction: the version, the log and the
  view come from one moment.
- Keys, under ``prefix`` (default ``cw:``): ``schema`` (the layout's version;
  a newer one raises ``StoreError``), ``ids`` (a set of conversation ids),
  then per conversation ``conv:<id>`` (a hash: ``version``, ``created``,
  ``updated``, ``view`` and one ``m:<key>`` field per metadata key),
  ``head:<id>`` and ``body:<id>`` (two lists, one entry per message: the
  row's JSON header and the message body), ``view:<id>`` (a hash) and
  ``vrows:<id>`` (a list). The id comes last, so no id can reach another's
  keys. Durability is the server's (its ``appendonly`` setting).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

from contextwindow._args import check_number, check_str, shown
from contextwindow._redact import display_url, scrub_url
from contextwindow.errors import ArgumentValueError, ConflictError, StoreError
from contextwindow.store._backend import RowStore, Snapshot, ViewHead
from contextwindow.store._codec import InfoRow, LogRow, ViewRow, meta_value

__all__ = ["SCHEMA", "RedisStore"]

SCHEMA = 2
"""The version of the key layout this code writes and reads (2: digests
cover token counts; a layout-1 store is upgraded when opened, its counts,
which no digest covers, dropped)."""

_APPEND = """
local v = redis.call('HGET', KEYS[1], 'version')
local actual = 0
if v then actual = tonumber(v) end
if actual == nil then return {-1, v} end
if actual ~= tonumber(ARGV[2]) then return {0, actual} end
if not v then
  redis.call('HSET', KEYS[1], 'version', 0, 'created', ARGV[3], 'updated', ARGV[3])
  redis.call('SADD', KEYS[4], ARGV[1])
end
local n = tonumber(ARGV[4])
for i = 1, n do
  redis.call('RPUSH', KEYS[2], ARGV[4 + i])
  redis.call('RPUSH', KEYS[3], ARGV[4 + n + i])
end
redis.call('HSET', KEYS[1], 'version', actual + n, 'updated', ARGV[3])
return {1, actual + n}
"""

_WRITE_VIEW = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local saved = tonumber(redis.call('HGET', KEYS[2], 'version') or '-1')
if saved ~= nil and saved > tonumber(ARGV[1]) then return {0, saved} end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[2], 'version', ARGV[1], 'time', ARGV[2])
if ARGV[3] == '1' then redis.call('HSET', KEYS[2], 'report', ARGV[4]) end
for i = 5, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
redis.call('HSET', KEYS[1], 'view', ARGV[1], 'updated', ARGV[2])
return {1}
"""

_META = """
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  if ARGV[2] == 'create' then created = 1 end
  redis.call('HSET', KEYS[1], 'version', 0, 'created', ARGV[3], 'updated', ARGV[3])
  redis.call('SADD', KEYS[2], ARGV[1])
elseif ARGV[2] == 'create' then
  return {0}
end
if ARGV[2] == 'replace' then
  for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(field, 1, 2) == 'm:' then redis.call('HDEL', KEYS[1], field) end
  end
end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'updated', ARGV[3])
return {1}
"""

_DELETE = """
local existed = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('SREM', KEYS[6], ARGV[1])
return existed
"""


def _driver() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise StoreError(
            "RedisStore needs redis-py: pip install 'contextwindow[redis]'"
        ) from exc
    return redis


def _number(text: object) -> object:
    """A Redis string as the number it holds; anything else as it is.

    What is not a number is left for the reader's checks to name.
    """
    if isinstance(text, str):
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return text
    return text


def _header(cid: str, position: int, text: str) -> list[Any]:
    """A row's header: ``[position, id, agent, time, tokens, digest]``."""
    try:
        fields: Any = json.loads(text)
    except ValueError as exc:
        raise StoreError(
            f"conversation {cid!r}, message {position}: row header is not valid "
            f"JSON ({exc})"
        ) from exc
    if not isinstance(fields, list) or len(fields) != 6:  # pyright: ignore[reportUnknownArgumentType]  # JSON: checked here
        raise StoreError(
            f"conversation {cid!r}, message {position}: row header is not a list "
            f"of 6 fields: {text[:200]!r}"
        )
    return fields  # pyright: ignore[reportUnknownVariableType]  # decode_row checks each field


class RedisStore(RowStore):
    """Conversations in a Redis server.

    Args:
        url: ``redis://[user:pass@]host:port/db``, ``rediss://`` or ``unix://``.
        prefix: Put before every key, so several stores share one server.
        timeout: Seconds to wait to connect and for each reply.

    Raises:
        StoreError: The driver is not installed, the server cannot be
            reached, or its keys are laid out by a newer contextwindow.

    Example:
        >>> RedisStore("redis://127.0.0.1:9/0", timeout=2)
        Traceback (most recent call last):
        ...
        contextwindow.errors.StoreError: cannot connect to RedisStore(...): ...
    """

    def __init__(self, url: str, *, prefix: str = "cw:", timeout: float = 10.0) -> None:
        check_str(url, "url", empty=False, secret=True)
        check_str(prefix, "prefix")
        check_number(timeout, "timeout", low=0, high=1e6, open_low=True)
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ArgumentValueError(
                "url", shown(url, secret=True), "a redis://, rediss:// or unix:// URL"
            )
        self._url = url
        self._prefix = prefix
        redis = _driver()
        self._errors: type[Exception] = redis.RedisError
        failure = None
        try:
            self._client: Any = redis.Redis.from_url(
                url,
                decode_responses=True,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
            )
            self._client.ping()
        except (redis.RedisError, ValueError, TypeError) as exc:
            # redis-py refuses a URL it cannot parse (a bad port, an unknown
            # option) with a ValueError or a TypeError. Its message is
            # scrubbed of the URL's secrets, and neither chained nor kept as
            # the context.
            failure = scrub_url(str(exc), url)
        if failure is not None:
            raise StoreError(f"cannot connect to {self!r}: {failure}")
        with self._call():
            self._scripts = {
                name: self._client.register_script(lua)
                for name, lua in (
                    ("append", _APPEND),
                    ("view", _WRITE_VIEW),
                    ("meta", _META),
                    ("delete", _DELETE),
                )
            }
            key = self._key("schema")
            self._client.set(key, SCHEMA, nx=True)
            found = self._client.get(key)
            if _number(found) == 1:
                self._drop_old_counts()
                self._client.set(key, SCHEMA)
                found = str(SCHEMA)
        if _number(found) != SCHEMA:
            newer = isinstance(_number(found), int) and int(found) > SCHEMA
            raise StoreError(
                f"{self!r}: key {key!r} says layout {found!r}; this contextwindow "
                f"reads layout {SCHEMA}" + ("; upgrade contextwindow" if newer else "")
            )

    def _drop_old_counts(self) -> None:
        """Layout 1 to 2: counts its digests do not cover are dropped (recounted)."""
        for cid in self._client.smembers(self._key("ids")):
            key = self._key("head", cid)
            for k, text in enumerate(self._client.lrange(key, 0, -1)):
                try:
                    fields = json.loads(text)
                except ValueError:
                    continue  # damage that reading names
                if not isinstance(fields, list):
                    continue
                row = cast("list[object]", fields)  # JSON
                if len(row) == 6 and row[4] != "{}" and "." not in str(row[5]):
                    row[4] = "{}"
                    self._client.lset(key, k, json.dumps(row, ensure_ascii=False))

    def __repr__(self) -> str:
        return f"RedisStore({display_url(self._url)!r})" + (
            "" if self._prefix == "cw:" else f"[prefix {self._prefix!r}]"
        )

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def _key(self, kind: str, cid: str = "") -> str:
        return f"{self._prefix}{kind}" + (f":{cid}" if cid else "")

    def _keys(self, cid: str) -> list[str]:
        return [self._key(k, cid) for k in ("conv", "head", "body", "view", "vrows")]

    @contextmanager
    def _call(self) -> Generator[None, None, None]:
        try:
            yield
        except self._errors as exc:
            raise StoreError(f"{self!r}: {scrub_url(str(exc), self._url)}") from exc

    # -- writing -----------------------------------------------------------------

    def _append(self, cid: str, expected: int, rows: list[LogRow], now: float) -> int:
        heads = [json.dumps(r[:6], ensure_ascii=False) for r in rows]
        conv, head, body = self._keys(cid)[:3]
        with self._call():
            ok, actual = self._scripts["append"](
                keys=[conv, head, body, self._key("ids")],
                args=[
                    cid,
                    expected,
                    repr(now),
                    len(rows),
                    *heads,
                    *(r[6] for r in rows),
                ],
            )
        if ok == -1:
            raise StoreError(f"conversation {cid!r}: version: corrupt value {actual!r}")
        if ok == 0:
            raise ConflictError(expected, int(actual))
        return int(actual)

    def _write_view(
        self,
        cid: str,
        version: int,
        rows: list[ViewRow],
        report: str | None,
        now: float,
    ) -> None:
        keys = self._keys(cid)
        args: list[Any] = [
            version,
            repr(now),
            "0" if report is None else "1",
            report or "",
        ]
        args += [json.dumps(r, ensure_ascii=False) for r in rows]
        with self._call():
            result = self._scripts["view"](keys=[keys[0], keys[3], keys[4]], args=args)
        if result[0] == -1:
            raise StoreError(f"no conversation {cid!r} in {self!r}")
        if result[0] == 0:
            raise ConflictError(version, int(result[1]))

    def _meta(self, cid: str, mode: str, meta: Mapping[str, Any], now: float) -> bool:
        args: list[Any] = [cid, mode, repr(now)]
        for key, value in meta.items():
            args += [f"m:{key}", meta_value(cid, key, value)]
        with self._call():
            (ok,) = self._scripts["meta"](
                keys=[self._key("conv", cid), self._key("ids")], args=args
            )
        return bool(ok)

    def _create(self, cid: str, meta: str, now: float) -> InfoRow:
        if not self._meta(cid, "create", json.loads(meta), now):
            raise StoreError(f"conversation {cid!r} already exists in {self!r}")
        return self._info_or_fail(cid)

    def _update_meta(
        self, cid: str, meta: Mapping[str, Any], replace: bool, now: float
    ) -> InfoRow:
        self._meta(cid, "replace" if replace else "merge", meta, now)
        return self._info_or_fail(cid)

    def _delete(self, cid: str) -> bool:
        with self._call():
            existed = self._scripts["delete"](
                keys=[*self._keys(cid), self._key("ids")], args=[cid]
            )
        return bool(existed)

    # -- reading -----------------------------------------------------------------

    def _info_row(self, cid: str, fields: Mapping[str, str]) -> InfoRow | None:
        if not fields:
            return None
        meta = {k[2:]: v for k, v in fields.items() if k.startswith("m:")}
        view = fields.get("view")
        return (
            cid,
            _number(fields.get("version")),  # decode_info checks these
            _number(fields.get("created")),
            _number(fields.get("updated")),
            meta,
            None if view is None else _number(view),
        )

    def _info(self, cid: str) -> InfoRow | None:
        with self._call():
            return self._info_row(cid, self._client.hgetall(self._key("conv", cid)))

    def _info_or_fail(self, cid: str) -> InfoRow:
        row = self._info(cid)
        if row is None:
            raise StoreError(
                f"conversation {cid!r} vanished from {self!r} while written"
            )
        return row

    def _version(self, cid: str) -> object:
        with self._call():
            found = self._client.hget(self._key("conv", cid), "version")
        return 0 if found is None else _number(found)

    def _list(self) -> list[InfoRow]:
        with self._call():
            ids = sorted(self._client.smembers(self._key("ids")))
            pipe = self._client.pipeline(transaction=False)
            for cid in ids:
                pipe.hgetall(self._key("conv", cid))
            found = pipe.execute()
        rows = [self._info_row(cid, f) for cid, f in zip(ids, found, strict=True)]
        return [r for r in rows if r is not None]

    def _rows(
        self, cid: str, start: int, heads: Sequence[str], bodies: Sequence[str]
    ) -> list[Sequence[Any]]:
        if len(heads) != len(bodies):
            raise StoreError(
                f"conversation {cid!r}: {len(heads)} row headers but {len(bodies)} "
                f"bodies from position {start}"
            )
        return [
            (*_header(cid, start + k, head), body)
            for k, (head, body) in enumerate(zip(heads, bodies, strict=True))
        ]

    def _snapshot(self, cid: str, since: int, view: bool) -> Snapshot | None:
        conv, head, body, view_key, vrows = self._keys(cid)
        with self._call():
            pipe = self._client.pipeline(transaction=True)
            pipe.hgetall(conv)
            pipe.lrange(head, since, -1)
            pipe.lrange(body, since, -1)
            if view:
                pipe.hgetall(view_key)
                pipe.lrange(vrows, 0, -1)
            found = pipe.execute()
        info = self._info_row(cid, found[0])
        if info is None:
            return None
        log = self._rows(cid, since, found[1], found[2])
        head_row, rows = (
            (None, []) if not view else self._view_parts(cid, found[3], found[4])
        )
        return Snapshot(info, log, head_row, rows)

    def _view_parts(
        self, cid: str, fields: Mapping[str, str], rows: Sequence[str]
    ) -> tuple[ViewHead | None, list[Sequence[Any]]]:
        if not fields:
            return None, []
        head = (
            _number(fields.get("version")),
            _number(fields.get("time")),
            fields.get("report"),
        )
        parsed: list[Sequence[Any]] = []
        for k, text in enumerate(rows):
            try:
                parsed.append(json.loads(text))
            except ValueError as exc:
                raise StoreError(
                    f"conversation {cid!r}, view message {k}: not valid JSON ({exc})"
                ) from exc
        return head, parsed  # type: ignore[return-value]  # decode_view checks the fields

    def _read_view(self, cid: str) -> tuple[ViewHead, Sequence[Sequence[Any]]] | None:
        keys = self._keys(cid)
        with self._call():
            pipe = self._client.pipeline(transaction=True)
            pipe.hgetall(keys[3])
            pipe.lrange(keys[4], 0, -1)
            fields, rows = pipe.execute()
        head, parsed = self._view_parts(cid, fields, rows)
        return None if head is None else (head, parsed)

    def _rows_at(self, cid: str, positions: Sequence[int]) -> list[Sequence[Any]]:
        _, head, body, _, _ = self._keys(cid)
        with self._call():
            pipe = self._client.pipeline(transaction=False)
            for p in positions:
                pipe.lindex(head, p)
                pipe.lindex(body, p)
            found = pipe.execute()
        out: list[Sequence[Any]] = []
        for k, p in enumerate(positions):
            h, b = found[2 * k], found[2 * k + 1]
            if h is not None and b is not None:
                out += self._rows(cid, p, [h], [b])
        return out

    def _index(self, cid: str, upto: int) -> tuple[int, list[tuple[int, str, str]]]:
        conv, head = self._keys(cid)[:2]
        with self._call():
            pipe = self._client.pipeline(transaction=True)
            pipe.hget(conv, "version")
            if upto:  # LRANGE 0 -1 would be the whole list
                pipe.lrange(head, 0, upto - 1)
            version, *heads = pipe.execute()
        if version is None:
            raise StoreError(f"no conversation {cid!r} in {self!r}")
        index: list[tuple[int, str, str]] = []
        for k, text in enumerate(heads[0] if heads else ()):
            fields = _header(cid, k, text)
            index.append((k, str(fields[1]), str(fields[5])))
        return int(version), index
