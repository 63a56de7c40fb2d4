"""A Responses transcript holding every item kind agents send (shared by tests)."""

from __future__ import annotations

from typing import Any

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAC0lEQVR4"
    "nGNgwAIAABUAAapll8QAAAAASUVORK5CYII="
)


def every_kind() -> list[dict[str, Any]]:
    """One item of every supported kind, in an order the API accepts."""
    return [
        {"type": "message", "role": "developer", "content": "You are an agent."},
        {"role": "user", "content": "Research, click, run and report."},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "tide tables Oslo"},
        },
        {
            "type": "file_search_call",
            "id": "fs_1",
            "status": "completed",
            "queries": ["tides"],
            "results": [{"file_id": "f1", "text": "High tide 09:12", "score": 0.9}],
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Found it.", "annotations": []}
            ],
        },
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "call_cu",
            "action": {"type": "click", "button": "left", "x": 10, "y": 20},
            "pending_safety_checks": [],
            "status": "completed",
        },
        {
            "type": "computer_call_output",
            "call_id": "call_cu",
            "output": {"type": "computer_screenshot", "image_url": PNG},
        },
        {
            "type": "code_interpreter_call",
            "id": "ci_1",
            "status": "completed",
            "code": "print(2 + 2)",
            "container_id": "cntr_1",
            "outputs": [{"type": "logs", "logs": "4"}],
        },
        {
            "type": "image_generation_call",
            "id": "ig_1",
            "status": "completed",
            "result": "iVBORw0KGgo=",
        },
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "call_ls",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls", "-la"], "env": {}},
        },
        {
            "type": "local_shell_call_output",
            "id": "call_ls",
            "output": "total 0\n" + "-rw-r--r-- 1 a a 0 file\n" * 40,
        },
        {
            "type": "custom_tool_call",
            "id": "ct_1",
            "call_id": "call_ct",
            "name": "apply_diff",
            "input": "*** Begin Patch\n+hello\n*** End Patch",
        },
        {"type": "custom_tool_call_output", "call_id": "call_ct", "output": "applied"},
        {
            "type": "mcp_list_tools",
            "id": "ml_1",
            "server_label": "deepwiki",
            "tools": [{"name": "ask", "input_schema": {"type": "object"}}],
        },
        {
            "type": "mcp_approval_request",
            "id": "mcpr_1",
            "name": "ask",
            "server_label": "deepwiki",
            "arguments": '{"question": "What is a tide?"}',
        },
        {
            "type": "mcp_approval_response",
            "approval_request_id": "mcpr_1",
            "approve": True,
        },
        {
            "type": "mcp_call",
            "id": "mc_1",
            "name": "ask",
            "server_label": "deepwiki",
            "arguments": '{"question": "What is a tide?"}',
            "output": "The rise and fall of the sea.",
        },
        {"type": "item_reference", "id": "msg_0"},
        {"type": "function_call", "call_id": "c1", "name": "clock", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "09:00"},
        {"role": "user", "content": "Thanks. Summarise."},
    ]
