"""contextwindow: keep LLM agents inside their model's context window.

Count tokens exactly and offline, know every model's window, convert between
provider shapes, and see what is in a context.

Example:
    >>> from contextwindow import Message, TokenCounter, get_model, get_tokenizer
    >>> conv = [Message.system("Be brief."), Message.user("Hello!")]
    >>> info = get_model("gpt-4o")
    >>> counter = TokenCounter(get_tokenizer(info.name))
    >>> (counter.messages(conv), info.context_window)
    (16, 128000)
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
from contextwindow.formats import (
    from_anthropic,
    from_openai,
    from_provider,
    from_responses,
    to_anthropic,
    to_openai,
    to_provider,
    to_responses,
)
from contextwindow.inspection import Inspection, inspect_messages
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
from contextwindow.models import ModelInfo, get_model, get_tokenizer, register_model
from contextwindow.tokens import (
    BPETokenizer,
    HeuristicTokenizer,
    TokenCounter,
    Tokenizer,
    count_messages,
)
from contextwindow.transcripts import Transcript, read_transcript, read_transcripts

__version__ = "0.1.0"

__all__ = [
    "BPETokenizer",
    "BudgetError",
    "ConflictError",
    "ContextWindowError",
    "HeuristicTokenizer",
    "Image",
    "Inspection",
    "InvalidMessageError",
    "Message",
    "ModelInfo",
    "Part",
    "Provider",
    "Role",
    "StoreError",
    "SummarizerError",
    "Text",
    "Thinking",
    "TokenCounter",
    "Tokenizer",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "Unit",
    "UnknownModelError",
    "UnknownModelWarning",
    "__version__",
    "count_messages",
    "from_anthropic",
    "from_openai",
    "from_provider",
    "from_responses",
    "get_model",
    "get_tokenizer",
    "inspect_messages",
    "read_transcript",
    "read_transcripts",
    "register_model",
    "to_anthropic",
    "to_openai",
    "to_provider",
    "to_responses",
    "units",
]
