"""Which of llama.cpp's server tests are not run against Laya, and why: the reason comes from
the test itself (its hub model, a llama-server-only endpoint, a feature Laya does not have), so
that a new test in a newer llama.cpp is classified the same way."""
from __future__ import annotations

import inspect
import re

# llama-server's own endpoints (not OpenAI's or Anthropic's) that Laya has no route for.
# `/completion` and `/completions` are served in llama-server's format (engine/apis/
# llama_native.py); `/embeddings` without /v1 is llama-server's own format there, which Laya
# answers in OpenAI's, as vLLM does.
OWN_ENDPOINTS = re.compile(r"""["'](/embedding|/embeddings|/slots|/props|"""
                           r"""/tokenize|/detokenize|/apply-template|/infill|/metrics|/lora-adapters|"""
                           r"""/chat/completions/input_tokens|/responses/input_tokens|/rerank|"""
                           r"""/reranking|/models/load|/cors-proxy)["'?]""")
HUB_MODEL = re.compile(r"[\w.-]+/[\w.-]+-GGUF|[\w.-]+/[\w.-]+:Q\d|\.gguf")
FEATURES = {  # a fragment of the test's source -> the llama-server feature it needs
    "ServerPreset.router()": "llama-server's router mode",
    "ServerPreset.tinygemma3()": "a vision model (tinygemma3 with its mmproj)",
    "image_url": "vision input",
    '"type": "image"': "vision input",
    "lora": "LoRA adapters",
    "server.jinja = False": "llama-server's non-Jinja template path",
    "chat_template_file": "a chat template file given on the command line",
    "server.chat_template =": "a chat template given on the command line",
    "reasoning_format": "reasoning extraction (reasoning_format)",
    "server.n_batch": "llama-server's batch size settings",
    "server.pooling": "a pooling type chosen on the command line",
    "ServerPreset.bert_bge_small_with_fa()": "flash attention settings on the command line",
    "LLAMA_SERVER_DEBUG": "llama-server's debug endpoints",
    "server.api_key = ": "",   # runs: the shim sets server.api_key
}


def reason(item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {}) or {}
    for value in params.values():
        if isinstance(value, (str, tuple)) and HUB_MODEL.search(str(value)):
            return f"needs a hub model ({str(value)[:60]})"
        if isinstance(value, str) and OWN_ENDPOINTS.fullmatch(f'"{value}"'):
            return f"llama-server's own endpoint {value}"
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError):
        return None
    source = source[source.find("def "):]   # the body, not the parameters' list of inputs
    found = OWN_ENDPOINTS.search(source)
    if found:
        return f"llama-server's own endpoint {found.group(1)}"
    for fragment, why in FEATURES.items():
        if why and fragment in source:
            return f"needs {why}"
    return None
