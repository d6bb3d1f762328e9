"""End to end with the built-in Gemma 3 270M: `make serve`'s config answers the openai SDK with text."""
from __future__ import annotations

import openai
import pytest
import yaml

from engine_harness import running_engine

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma_engine(tmp_path_factory):
    config = yaml.safe_load(open("models.yaml"))
    with running_engine(config, tmp_path_factory.mktemp("gemma")) as eng:
        yield eng


def test_completion_is_real_text(gemma_engine):
    sdk = openai.OpenAI(base_url=gemma_engine.url + "/v1", api_key="unused", max_retries=0)
    raw = sdk.completions.with_raw_response.create(
        model="auto", prompt="The Eiffel Tower is located in the city of", max_tokens=8, temperature=0)
    assert raw.headers["x-laya-model"] == "gemma-270m"
    assert "Paris" in raw.parse().choices[0].text


def test_chat_streams_with_gemma_template(gemma_engine):
    sdk = openai.OpenAI(base_url=gemma_engine.url + "/v1", api_key="unused", max_retries=0)
    chunks = list(sdk.chat.completions.create(
        model="gemma-270m", messages=[{"role": "system", "content": "Answer briefly."},
                                      {"role": "user", "content": "What is the capital of France?"}],
        max_tokens=24, temperature=0, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert "<start_of_turn>" not in text and "<end_of_turn>" not in text
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
