"""contextwindow: keep LLM agents inside their model's context window.

Count tokens exactly and offline, know every model's window, convert between
provider shapes, and see what is in a context::

    from contextwindow import Message, get_model, count_messages, get_tokenizer

    conv = [Message.system("Be brief."), Message.user("Hello!")]
    info = get_model("gpt-4o")
    used = count_messages(conv, get_tokenizer(info.name))
"""

from __future__ import annotations

from contextwindow.errors import (
    BudgetError,
    ConflictError,
    ContextWindowError,
    InvalidMessageError,
    StoreError,
    SummarizerError,
    UnknownModelError,
    UnknownModelWarning,
)
from contextwindow.messages import (
    Image,
    Message,
    Part,
    Provider,
    Role,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    Unit,
    units,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetError",
    "ConflictError",
    "ContextWindowError",
    "Image",
    "InvalidMessageError",
    "Message",
    "Part",
    "Provider",
    "Role",
    "StoreError",
    "SummarizerError",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Unit",
    "UnknownModelError",
    "UnknownModelWarning",
    "__version__",
    "units",
]
