"""Function tools in a chat prompt, free of any model library (shared by llama.cpp and MLX).

- `check_tools` checks a generate command's OpenAI function tools.
- `template_knows_tools` tells whether a Jinja chat template renders `tools` itself.
- `for_template` prepares messages for such a template: history tool calls get their
  `function.arguments` as a parsed object, the Hugging Face convention (Qwen's template does
  `arguments | tojson`; a JSON string there would be quoted twice).
- `inline_tools` is for every other format: the tools go into the system prompt, ahead of its
  text, in the Hermes style (what most small instruct models were tuned on, and the first format the engine parses),
  history tool calls become `<tool_call>` text in the assistant turn, and tool results become
  `tool` turns, or user turns wrapped in `<tool_response>` where the format has no tool role.
"""
from __future__ import annotations

import json
import re

from laya_desktop.runners.protocol import BadRequest

TOOLS_SECTION = (
    "# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>")


def check_tools(tools) -> list[dict] | None:
    """The command's `tools` as OpenAI function tools, or None when there are none."""
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list):
        raise BadRequest("tools must be a list of function tools")
    out = []
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if (not isinstance(fn, dict) or tool.get("type", "function") != "function"
                or not isinstance(fn.get("name"), str) or not fn["name"]):
            raise BadRequest(f"tools[{i}] must be {{\"type\": \"function\", \"function\": "
                             "{\"name\": ..., \"parameters\": {...}}}")
        if fn.get("parameters") is not None and not isinstance(fn["parameters"], dict):
            raise BadRequest(f"tools[{i}].function.parameters must be a JSON schema object")
        out.append({"type": "function", "function": fn})
    return out


def template_knows_tools(template: str | None) -> bool:
    """Whether the template reads the `tools` variable (so it renders tools its own way)."""
    if not template:
        return False
    try:
        import jinja2
        import jinja2.ext
        from jinja2 import meta

        env = jinja2.Environment(extensions=[jinja2.ext.loopcontrols])
        return "tools" in meta.find_undeclared_variables(env.parse(template))
    except Exception:  # a tag plain Jinja does not know ({% generation %}): look at the text
        return re.search(r"\btools\b", template) is not None


def parsed_arguments(arguments):
    """A tool call's `arguments` JSON string as an object; left as it is when it is not JSON."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def for_template(messages: list[dict]) -> list[dict]:
    out = []
    for m in messages:
        if m.get("tool_calls"):
            calls = [{**c, "function": {**c["function"],
                                        "arguments": parsed_arguments(c["function"].get("arguments"))}}
                     for c in m["tool_calls"]]
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def tools_system_prompt(tools: list[dict]) -> str:
    return TOOLS_SECTION.format(tools="\n".join(json.dumps(t, ensure_ascii=False) for t in tools))


def tool_calls_text(tool_calls: list[dict]) -> str:
    return "\n".join(
        "<tool_call>\n" + json.dumps({"name": c["function"]["name"],
                                      "arguments": parsed_arguments(c["function"].get("arguments") or {})},
                                     ensure_ascii=False) + "\n</tool_call>"
        for c in tool_calls)


def inline_tools(messages: list[dict], tools: list[dict] | None, tool_role: bool) -> list[dict]:
    """Messages for a format that knows only roles and text (see the module docstring)."""
    out: list[dict] = []
    tool_turn = False   # the last message in `out` is a user turn made of tool results
    for m in messages:
        role, content = m["role"], m["content"]
        if role == "assistant" and m.get("tool_calls"):
            calls = tool_calls_text(m["tool_calls"])
            out.append({"role": "assistant", "content": f"{content}\n{calls}" if content else calls})
            tool_turn = False
        elif role == "tool":
            text = f"<tool_response>\n{content}\n</tool_response>"
            if tool_role:
                out.append({"role": "tool", "content": text})
            elif tool_turn:   # parallel calls' results: one user turn, so roles still alternate
                out[-1] = {"role": "user", "content": out[-1]["content"] + "\n" + text}
            else:
                out.append({"role": "user", "content": text})
            tool_turn = not tool_role
        elif role == "user" and tool_turn:   # text sent with the results (Anthropic's shape)
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + content}
            tool_turn = False
        else:
            out.append({"role": role, "content": content})
            tool_turn = False
    if tools:
        section = tools_system_prompt(tools)
        if out and out[0]["role"] == "system":
            first = out[0]["content"]
            # tools first: they are the same in every session of an agent, while its system text
            # names the project part-way in; the prefix two sessions share is then the tools and
            # the system text up to that point (Anthropic caches tools -> system in this order)
            out[0] = {"role": "system", "content": f"{section}\n\n{first}" if first else section}
        else:
            out.insert(0, {"role": "system", "content": section})
    return out
