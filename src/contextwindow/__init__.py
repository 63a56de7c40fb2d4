"""contextwindow: keep LLM agents inside their model's context window.

Count tokens exactly and offline, know every model's window, convert between
provider shapes, see what is in a context, and fit it into a budget with
composable strategies that always return a conversation the provider accepts.

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
from contextwindow.fitting import fit
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
from contextwindow.multiagent import SharedContext, fold_result, handoff
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    Deduplicate,
    DropOldest,
    Fitted,
    Pipeline,
    Report,
    SelectRelevant,
    SlidingWindow,
    Strategy,
    TruncateToolResults,
)
from contextwindow.tokens import (
    BPETokenizer,
    HeuristicTokenizer,
    TokenCounter,
    Tokenizer,
    count_messages,
)
from contextwindow.transcripts import Transcript, read_transcript, read_transcripts
from contextwindow.validity import ensure_valid, problems

__version__ = "0.1.0"

__all__ = [
    "BPETokenizer",
    "Budget",
    "BudgetError",
    "ClearToolResults",
    "ConflictError",
    "ContextWindowError",
    "Deduplicate",
    "DropOldest",
    "Fitted",
    "HeuristicTokenizer",
    "Image",
    "Inspection",
    "InvalidMessageError",
    "Message",
    "ModelInfo",
    "Part",
    "Pipeline",
    "Provider",
    "Report",
    "Role",
    "SelectRelevant",
    "SharedContext",
    "SlidingWindow",
    "StoreError",
    "Strategy",
    "SummarizerError",
    "Text",
    "Thinking",
    "TokenCounter",
    "Tokenizer",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "TruncateToolResults",
    "Unit",
    "UnknownModelError",
    "UnknownModelWarning",
    "__version__",
    "count_messages",
    "ensure_valid",
    "fit",
    "fold_result",
    "from_anthropic",
    "from_openai",
    "from_provider",
    "from_responses",
    "get_model",
    "get_tokenizer",
    "handoff",
    "inspect_messages",
    "problems",
    "read_transcript",
    "read_transcripts",
    "register_model",
    "to_anthropic",
    "to_openai",
    "to_provider",
    "to_responses",
    "units",
]
