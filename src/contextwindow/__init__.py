"""contextwindow: keep LLM agents inside their model's context window.

Count tokens exactly and offline, know every model's window, convert between
provider shapes, see what is in a context, fit it into a budget with
composable strategies that always return a conversation the provider accepts,
manage a live conversation (full history, compacted view, threshold
handlers), and keep conversations in a store (SQLite by default; PostgreSQL
or Redis for many workers).

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
    ArgumentError,
    ArgumentTypeError,
    ArgumentValueError,
    BudgetError,
    ConflictError,
    ContentDroppedWarning,
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
from contextwindow.manager import (
    AsyncContextManager,
    AsyncThresholdContext,
    Compaction,
    CompactionPolicy,
    ContextManager,
    Event,
    Prepared,
    ThresholdContext,
)
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
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
from contextwindow.recalling import answer_recall, context_recall, recall_tool
from contextwindow.store import (
    ConversationInfo,
    MemoryStore,
    PostgresStore,
    RedisStore,
    SQLiteStore,
    Store,
    StoredConversation,
    StoredMessage,
    StoredView,
    ViewMessage,
    open_store,
)
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    CompactLossless,
    Deduplicate,
    DropOldest,
    Fitted,
    MaxMessages,
    Pipeline,
    Report,
    SelectRelevant,
    SlidingWindow,
    StaleReads,
    Strategy,
    Summarize,
    TruncateToolInputs,
    TruncateToolResults,
)
from contextwindow.summarizers import (
    AnthropicSummarizer,
    AsyncSummarizer,
    ExtractiveSummarizer,
    Fact,
    Facts,
    OpenAICompatibleSummarizer,
    Summarizer,
    check_facts,
    extract_facts,
    is_summary,
    recall,
    summary_sources,
)
from contextwindow.tokens import (
    BPETokenizer,
    Calibration,
    HeuristicTokenizer,
    TokenCounter,
    Tokenizer,
    count_messages,
    reported_input_tokens,
)
from contextwindow.transcripts import Transcript, read_transcript, read_transcripts
from contextwindow.validity import ensure_valid, problems

__version__ = "0.1.0"
"""The package's version."""

__all__ = [
    "AnthropicSummarizer",
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "AsyncContextManager",
    "AsyncSummarizer",
    "AsyncThresholdContext",
    "BPETokenizer",
    "Budget",
    "BudgetError",
    "Calibration",
    "ClearToolResults",
    "CompactLossless",
    "Compaction",
    "CompactionPolicy",
    "ConflictError",
    "ContentDroppedWarning",
    "ContextManager",
    "ContextWindowError",
    "ConversationInfo",
    "Deduplicate",
    "DropOldest",
    "Event",
    "ExtractiveSummarizer",
    "Fact",
    "Facts",
    "Fitted",
    "HeuristicTokenizer",
    "Image",
    "Inspection",
    "InvalidMessageError",
    "MaxMessages",
    "MemoryStore",
    "Message",
    "ModelInfo",
    "Opaque",
    "OpenAICompatibleSummarizer",
    "Part",
    "Pipeline",
    "PostgresStore",
    "Prepared",
    "Provider",
    "RedisStore",
    "Report",
    "Role",
    "SQLiteStore",
    "SelectRelevant",
    "SharedContext",
    "SlidingWindow",
    "StaleReads",
    "Store",
    "StoreError",
    "StoredConversation",
    "StoredMessage",
    "StoredView",
    "Strategy",
    "Summarize",
    "Summarizer",
    "SummarizerError",
    "Text",
    "Thinking",
    "ThresholdContext",
    "TokenCounter",
    "Tokenizer",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "TruncateToolInputs",
    "TruncateToolResults",
    "Unit",
    "UnknownModelError",
    "UnknownModelWarning",
    "ViewMessage",
    "__version__",
    "answer_recall",
    "check_facts",
    "context_recall",
    "count_messages",
    "ensure_valid",
    "extract_facts",
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
    "is_summary",
    "open_store",
    "problems",
    "read_transcript",
    "read_transcripts",
    "recall",
    "recall_tool",
    "register_model",
    "reported_input_tokens",
    "summary_sources",
    "to_anthropic",
    "to_openai",
    "to_provider",
    "to_responses",
    "units",
]
