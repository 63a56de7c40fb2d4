"""What file tools a conversation used: which calls read or wrote which files.

Contract: ``file_actions(call)`` is a pure function of one call; it knows tools
by name (``FileTool``, ``DEFAULT_FILE_TOOLS``) and reads the commands of shell
tools (``SHELL_TOOLS``) for plain reads (``cat``, ``nl``, ``head``, ``tail``,
``sed -n``) and ``apply_patch`` patches; any other call touches no file.

Example:
    >>> from contextwindow.messages import ToolCall
    >>> file_actions(ToolCall("1", "Edit", '{"file_path": "./lib/a.ex"}'))
    [FileAction(action='write', path='lib/a.ex', part=None)]
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from contextwindow.messages import ToolCall

__all__ = [
    "DEFAULT_FILE_TOOLS",
    "SHELL_TOOLS",
    "FileAction",
    "FileTool",
    "file_actions",
]


@dataclass(frozen=True, slots=True)
class FileTool:
    """How a tool touches files: reads or writes, and which arguments say where.

    Example:
        >>> FileTool("read", "path", ("offset", "limit")).action
        'read'
    """

    action: Literal["read", "write"]
    """Whether a call reads the file or writes it."""
    path: str
    """The argument holding the path."""
    part: tuple[str, ...] = ()
    """Arguments that make a read partial (a range, an offset)."""
    views: tuple[str, ...] = ()
    """For an editor tool: the ``command`` values that only read (``view``)."""


@dataclass(frozen=True, slots=True)
class FileAction:
    """One file a call touched."""

    action: Literal["read", "write"]
    path: str
    part: str | None = None
    """What part of the file a read covers (``None``: all of it)."""


DEFAULT_FILE_TOOLS: Mapping[str, FileTool] = {
    "Read": FileTool("read", "file_path", ("offset", "limit", "pages")),
    "Write": FileTool("write", "file_path"),
    "Edit": FileTool("write", "file_path"),
    "MultiEdit": FileTool("write", "file_path"),
    "NotebookEdit": FileTool("write", "notebook_path"),
    "read_file": FileTool(
        "read", "path", ("offset", "limit", "start_line", "end_line")
    ),
    "view_file": FileTool(
        "read", "path", ("offset", "limit", "start_line", "end_line")
    ),
    "write_file": FileTool("write", "path"),
    "create_file": FileTool("write", "path"),
    "edit_file": FileTool("write", "path"),
    "str_replace": FileTool("write", "path"),
    "str_replace_editor": FileTool("write", "path", ("view_range",), ("view",)),
    "str_replace_based_edit_tool": FileTool(
        "write", "path", ("view_range",), ("view",)
    ),
}
"""File tools known by default, by name."""

SHELL_TOOLS: tuple[str, ...] = ("shell", "Bash", "bash", "exec_command", "local_shell")
"""Tools whose ``command`` argument is read for plain file reads and patches."""

_READERS = frozenset(("cat", "nl", "head", "tail", "sed", "less", "more", "bat"))
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.*\S)", re.MULTILINE)
"""A patch's file, to its last character that is not blank (a lazy name before
trailing blanks took 3 s on a line of 20,000 spaces)."""
_SHELLS = frozenset(("bash", "sh", "zsh", "/bin/bash", "/bin/sh"))


def file_actions(
    call: ToolCall,
    tools: Mapping[str, FileTool] = DEFAULT_FILE_TOOLS,
    shell: Sequence[str] = SHELL_TOOLS,
) -> list[FileAction]:
    """The files a call reads or writes (``[]`` for any other call).

    Example:
        >>> file_actions(ToolCall("1", "shell", '{"command": ["bash", "-lc", '
        ...                       '"sed -n 1,80p src/a.py"]}'))
        [FileAction(action='read', path='src/a.py', part='sed -n 1,80p')]
    """
    tool = tools.get(call.name)
    if tool is None and call.name not in shell and call.name != "apply_patch":
        return []  # no file tool: its arguments are not parsed
    args: Any = call.input
    if not isinstance(args, dict):
        return []
    given = cast("dict[str, Any]", args)
    if tool is not None:
        path = given.get(tool.path)
        if not isinstance(path, str) or not path:
            return []
        action = tool.action
        if tool.views and given.get("command") in tool.views:
            action = "read"
        elif tool.views and "command" in given:
            action = "write"
        part = None
        if action == "read":
            shown = [f"{k}={given[k]}" for k in tool.part if given.get(k) is not None]
            part = " ".join(shown) or None
        return [FileAction(action, _norm(path), part)]
    if call.name in shell:
        return _shell_actions(given.get("command"))
    if call.name == "apply_patch":
        text = given.get("input") or given.get("patch") or call.arguments
        return [FileAction("write", _norm(p)) for p in _PATCHED.findall(str(text))]
    return []


def _norm(path: str) -> str:
    path = path.strip()
    return posixpath.normpath(path) if path else path


def _shell_actions(command: object) -> list[FileAction]:
    if isinstance(command, list):
        words = [str(w) for w in cast("list[object]", command)]
        if len(words) >= 3 and words[0] in _SHELLS and words[1] in ("-c", "-lc"):
            text = words[-1]
        elif words and words[0] == "apply_patch":
            return [FileAction("write", _norm(p)) for p in _PATCHED.findall(words[-1])]
        else:
            text = shlex.join(words)
    elif isinstance(command, str):
        text = command
    else:
        return []
    if "apply_patch" in text:
        return [FileAction("write", _norm(p)) for p in _PATCHED.findall(text)]
    if any(c in text for c in "|;&><`$\n"):
        return []  # not one plain read
    try:
        words = shlex.split(text)
    except ValueError:
        return []
    if not words or words[0] not in _READERS:
        return []
    files = [w for w in words[1:] if not w.startswith("-") and not _is_range(w)]
    flags = [w for w in words[1:] if w not in files]
    if len(files) != 1:
        return []
    whole = words[0] in ("cat", "less", "more", "bat", "nl") and not any(
        f.startswith(("-v", "-r")) for f in flags
    )
    part = None if whole else " ".join([words[0], *flags])
    return [FileAction("read", _norm(files[0]), part)]


def _is_range(word: str) -> bool:
    """``1,80p``, ``20`` (a count after ``-n``): not a file."""
    return bool(re.fullmatch(r"\d+(?:,\d+)?p?|'?\d+,\d+p'?", word))
