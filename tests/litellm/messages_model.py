"""A scripted model behind LiteLLM's Anthropic `/v1/messages` endpoint, for adk's Anthropic tests.

LiteLLM serves `/v1/messages` for a model that is not Anthropic's own by translating the request
into a chat-completions call (`litellm.acompletion`), which reaches this custom provider, and by
translating the provider's streamed chunks back into Anthropic's events. What survives the
translation both ways is what the tests check:

- thinking: this model streams a `thinking_blocks` delta with a signature, which the proxy sends
  as `thinking_delta` + `signature_delta`; a request's assistant `thinking` blocks reach this
  model as `thinking_blocks` on the assistant message, signature included;
- tool use: several calls in one answer (`tool_use` blocks with `input_json_delta`); results come
  back as `tool` messages (LiteLLM does not pass `is_error` through: the result text does);
- usage: `prompt_tokens_details.cached_tokens` and `cache_creation_input_tokens` become the
  events' `cache_read_input_tokens` and `cache_creation_input_tokens`.

The script, one streamed response per request:
- the last message is a weather question naming cities ("in Oslo and Mars"): a thinking block
  ("N cities to check.", signed `sig-N`), the text "Let me check.", and one `weather` call per
  city;
- the last messages are tool results: the text "Results: <each result>." (no thinking);
- anything else: a text answer.

Each request is appended as one JSON line ({"model", "messages"}) to ADK_LITELLM_RECORD.
"""

import json
import os
import re
import threading
import time

from litellm import CustomLLM, ModelResponse
from litellm.types.utils import (
    ChatCompletionDeltaToolCall,
    Delta,
    Function,
    ModelResponseStream,
    StreamingChoices,
    Usage,
)

if os.environ.get("ADK_LITELLM_EXIT_WITH_PARENT"):

    def _watch_parent():
        parent = os.getppid()
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=_watch_parent, daemon=True).start()

_record_lock = threading.Lock()


def _record(model, messages):
    path = os.environ.get("ADK_LITELLM_RECORD")
    if not path:
        return
    line = json.dumps({"model": model, "messages": messages}, default=str)
    with _record_lock, open(path, "a", encoding="utf-8") as record:
        record.write(line + "\n")


def _text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _script(messages):
    """(thinking or None, text, [(name, args)])."""
    if messages and messages[-1].get("role") == "tool":
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.insert(0, _text(message.get("content")))
        return (None, "Results: " + "; ".join(results) + ".", [])
    questions = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    question = questions[-1] if questions else ""
    if "weather" in question.lower():
        cities = re.findall(r"\b(?:in|and) ([A-Z][a-zA-Z]+)", question) or ["Oslo"]
        thinking = f"{len(cities)} cities to check."
        return ((thinking, f"sig-{len(cities)}"), "Let me check.",
                [("weather", {"city": city}) for city in cities])
    return (None, f"You said: {question}", [])


def _chunk(model, delta, finish_reason=None, usage=None):
    chunk = ModelResponseStream(
        model=model,
        choices=[StreamingChoices(index=0, delta=delta, finish_reason=finish_reason)],
    )
    if usage is not None:
        chunk.usage = usage
    return chunk


class MessagesModel(CustomLLM):
    def __init__(self):
        super().__init__()
        self.calls = 0

    async def astreaming(self, model, messages, *args, optional_params=None, **kwargs):
        _record(model, messages)
        self.calls += 1
        thinking, text, calls = _script(messages)
        if thinking is not None:
            words, signature = thinking
            yield _chunk(model, Delta(
                reasoning_content=words,
                thinking_blocks=[{"type": "thinking", "thinking": words, "signature": signature}],
            ))
            yield _chunk(model, Delta(
                thinking_blocks=[{"type": "redacted_thinking", "data": f"redacted-{len(calls)}"}],
            ))
        for index, word in enumerate(text.split(" ")):
            yield _chunk(model, Delta(content=word if index == 0 else " " + word))
        for index, (name, args) in enumerate(calls):
            yield _chunk(model, Delta(tool_calls=[ChatCompletionDeltaToolCall(
                id=f"toolu_{self.calls}_{index}", type="function", index=index,
                function=Function(name=name, arguments=json.dumps(args)),
            )]))
        # The last chunk in LiteLLM's generic shape, the one whose `usage` it keeps as sent.
        yield {
            "text": "",
            "tool_use": None,
            "is_finished": True,
            "finish_reason": "tool_calls" if calls else "stop",
            "usage": {
                "prompt_tokens": 1200,
                "completion_tokens": 30,
                "total_tokens": 1230,
                "prompt_tokens_details": {"cached_tokens": 1000},
                "cache_creation_input_tokens": 150,
            },
            "index": 0,
        }

    async def acompletion(self, model, messages, *args, optional_params=None, **kwargs):
        _record(model, messages)
        self.calls += 1
        _, text, _ = _script(messages)
        return ModelResponse(model=model, choices=[
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}])


handler = MessagesModel()
