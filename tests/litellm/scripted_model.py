"""A scripted model behind a real LiteLLM proxy, for adk's OpenAI tests.

It answers as a strict tool-using model does, in ONE streamed response per request:

- the last message is a question about the weather: "Let me check." and then a call of
  `weather` for the city named (Oslo unless another capitalised word follows "in"); about
  arithmetic (digits): "Let me calculate." and a call of `calculator` with the expression;
  anything else: a text answer listing the questions asked so far;
- the last message is a tool result: a text answer quoting it;
- the last message is the assistant's own (its text sent back after the tool results, which
  is the wrong order): it answers the last question again, calling the tool again, as a strict
  model does, so a client that gets the order wrong loops.

Every request it receives is appended as one JSON line ({"model", "messages", "tools"}) to the
file named by ADK_LITELLM_RECORD, so a test can read exactly what the proxy was sent.

The proxy exits when the process that started it does (the tests start it once per test binary
and cannot always stop it): a thread watches the parent process id.
"""

import json
import os
import re
import threading
import time

import litellm
from litellm import CustomLLM, ModelResponse


def _watch_parent():
    parent = os.getppid()
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


if os.environ.get("ADK_LITELLM_EXIT_WITH_PARENT"):
    threading.Thread(target=_watch_parent, daemon=True).start()

_record_lock = threading.Lock()


def _record(model, messages, optional_params):
    path = os.environ.get("ADK_LITELLM_RECORD")
    if not path:
        return
    line = json.dumps(
        {"model": model, "messages": messages, "tools": optional_params.get("tools")},
        default=str,
    )
    with _record_lock, open(path, "a", encoding="utf-8") as record:
        record.write(line + "\n")


def _text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _answer(messages):
    """(text, tool call or None) for the conversation so far."""
    last = messages[-1] if messages else {}
    questions = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if last.get("role") == "tool":
        call_name = "the tool"
        for message in reversed(messages):
            for call in message.get("tool_calls") or []:
                if call.get("id") == last.get("tool_call_id"):
                    call_name = "the " + call["function"]["name"] + " tool"
        return (f"{call_name[0].upper()}{call_name[1:]} says: {_text(last.get('content'))}.", None)
    question = questions[-1] if questions else ""
    if "weather" in question.lower():
        city = re.search(r"\bin ([A-Z][a-zA-Z]+)", question)
        args = {"city": city.group(1) if city else "Oslo"}
        return ("Let me check.", ("weather", args))
    expression = re.search(r"[\d(][\d\s+\-*/().]*[\d)]", question)
    if expression:
        return ("Let me calculate.", ("calculator", {"expression": expression.group(0).strip()}))
    earlier = ", ".join(f'"{q}"' for q in questions[:-1])
    return (f"Earlier you said: {earlier}." if earlier else "This is our first exchange.", None)


class ScriptedModel(CustomLLM):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def _script(self, model, messages, optional_params):
        _record(model, messages, optional_params)
        self.calls += 1
        return _answer(messages)

    async def astreaming(self, model, messages, *args, optional_params=None, **kwargs):
        text, call = self._script(model, messages, optional_params or {})
        words = text.split(" ")
        for index, word in enumerate(words):
            yield {
                "text": word if index == 0 else " " + word,
                "tool_use": None,
                "is_finished": False,
                "finish_reason": "",
                "usage": None,
                "index": 0,
            }
        usage = {"prompt_tokens": 10, "completion_tokens": len(words), "total_tokens": 10 + len(words)}
        if call is None:
            yield {"text": "", "tool_use": None, "is_finished": True, "finish_reason": "stop",
                   "usage": usage, "index": 0}
            return
        name, args = call
        yield {
            "text": "",
            "tool_use": {
                "id": f"call_{self.calls}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
                "index": 0,
            },
            "is_finished": True,
            "finish_reason": "tool_calls",
            "usage": usage,
            "index": 0,
        }

    async def acompletion(self, model, messages, *args, optional_params=None, **kwargs):
        text, call = self._script(model, messages, optional_params or {})
        message = {"role": "assistant", "content": text}
        finish_reason = "stop"
        if call is not None:
            name, args = call
            message["tool_calls"] = [{
                "id": f"call_{self.calls}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }]
            finish_reason = "tool_calls"
        return ModelResponse(
            model=model,
            choices=[{"index": 0, "message": message, "finish_reason": finish_reason}],
        )


handler = ScriptedModel()
