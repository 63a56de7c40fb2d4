"""Benchmark data sets: tau-bench trajectories and LoCoMo conversations.

Contract: each trajectory or conversation is one ``Transcript``. tau-bench
messages are read by ``from_openai``; LoCoMo turns become ``user`` (speaker A)
and ``assistant`` (speaker B) messages named for the speaker, with a
``blip_caption`` appended as a second text part ``[shared an image: …]`` and
``dia_id``, ``session`` and ``date_time`` in ``meta``.
"""

from __future__ import annotations

import re
from typing import Any

from contextwindow._validate import expect_list, expect_mapping, type_name
from contextwindow.errors import InvalidMessageError
from contextwindow.formats import from_openai
from contextwindow.messages import Message, Role, Text
from contextwindow.transcripts._base import Transcript

__all__ = ["read_locomo", "read_tau_bench"]


def read_tau_bench(value: Any, name: str) -> list[Transcript]:
    out: list[Transcript] = []
    for i, raw in enumerate(expect_list(value, name)):
        p = f"{name}[{i}]"
        run = expect_mapping(raw, p)
        if "traj" not in run:
            raise InvalidMessageError(f"{p}.traj", "missing")
        messages = from_openai(run["traj"], path=f"{p}.traj")
        task, trial = run.get("task_id"), run.get("trial")
        meta = {
            "task_id": task,
            "trial": trial,
            "reward": run.get("reward"),
            "info": run.get("info"),
        }
        title = f"trajectory {i} (task {task}, trial {trial})"
        out.append(Transcript(tuple(messages), "tau_bench", title, meta=meta))
    return out


_SESSION = re.compile(r"session_(\d+)")


def read_locomo(value: Any, name: str) -> list[Transcript]:
    out: list[Transcript] = []
    for i, raw in enumerate(expect_list(value, name)):
        p = f"{name}[{i}]"
        sample = expect_mapping(raw, p)
        if "conversation" not in sample:
            raise InvalidMessageError(f"{p}.conversation", "missing")
        conv = expect_mapping(sample["conversation"], f"{p}.conversation")
        speaker_a = conv.get("speaker_a")
        sessions = sorted(
            (int(m.group(1)), key)
            for key in conv
            if (m := _SESSION.fullmatch(key)) is not None
        )
        messages: list[Message] = []
        for number, key in sessions:
            date = conv.get(f"{key}_date_time")
            sp = f"{p}.conversation.{key}"
            for k, turn_raw in enumerate(expect_list(conv[key], sp)):
                messages.append(
                    _locomo_turn(turn_raw, f"{sp}[{k}]", speaker_a, number, date)
                )
        sample_id = sample.get("sample_id")
        meta = {
            "sample_id": sample_id,
            "speaker_a": speaker_a,
            "speaker_b": conv.get("speaker_b"),
            "qa": sample.get("qa", []),
        }
        title = str(sample_id) if sample_id is not None else f"conversation {i}"
        out.append(Transcript(tuple(messages), "locomo", title, meta=meta))
    return out


def _locomo_turn(raw: Any, p: str, speaker_a: Any, session: int, date: Any) -> Message:
    turn = expect_mapping(raw, p)
    speaker = turn.get("speaker")
    text = turn.get("text")
    if not isinstance(speaker, str):
        raise InvalidMessageError(
            f"{p}.speaker", f"expected a string, got {type_name(speaker)}"
        )
    if not isinstance(text, str):
        raise InvalidMessageError(
            f"{p}.text", f"expected a string, got {type_name(text)}"
        )
    parts = [Text(text)]
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption:
        parts.append(Text(f"[shared an image: {caption}]"))
    role: Role = "user" if speaker == speaker_a else "assistant"
    meta: dict[str, Any] = {
        "dia_id": turn.get("dia_id"),
        "session": session,
        "date_time": date,
    }
    if "img_url" in turn:
        meta["img_url"] = turn["img_url"]
    return Message(role, tuple(parts), name=speaker, meta=meta)
