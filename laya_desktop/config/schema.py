"""The models.yaml schema as plain dataclasses.

Field names are the ones docs/ARCHITECTURE.md fixes. Validation and loading live in
`validate.py`; these classes only hold already-validated values. `metadata["doc"]` describes
each field for docs/configuration.md (tests/test_docs_configuration.py holds the page to every
field) and the GUI's tooltips.
"""
from __future__ import annotations

from dataclasses import dataclass, field

BACKENDS = ("llama_cpp", "mlx", "openai", "anthropic")
LOCAL_BACKENDS = ("llama_cpp", "mlx")
REMOTE_BACKENDS = ("openai", "anthropic")
KV_CACHE_TYPES = ("f16", "q8_0", "q4_0")


def _doc(text: str, **kw):
    return field(metadata={"doc": text}, **kw)


@dataclass
class ServerConfig:
    host: str = _doc("Address the engine listens on; anything but loopback needs api_key.",
                     default="127.0.0.1")
    port: int = _doc("TCP port of the OpenAI-compatible endpoint.", default=8555)
    api_key: str | None = _doc("When set, every request but /healthz needs 'Authorization: Bearer <key>'.",
                               default=None)
    admin_api_key: str | None = _doc("When set, /admin/* and /metrics need this key instead of "
                                     "api_key (which then opens only the model APIs).", default=None)
    max_body_mb: float = _doc("Largest request body in MiB; a bigger one gets a 413.", default=32)
    cors_origins: list[str] = _doc("Browser origins (https://host:port) whose pages may call the "
                                   "engine and read its answers (CORS), besides pages on loopback, "
                                   "which may call but not read; '*' for any. Other origins get 403.",
                                   default_factory=list)
    allowed_hosts: list[str] = _doc("Host names clients may reach the engine by, besides IP "
                                    "addresses, localhost and *.localhost (e.g. the machine's LAN "
                                    "name; '.example.lan' takes its subdomains too, '*' any). "
                                    "Another Host gets 421 (DNS rebinding).", default_factory=list)
    allowed_key_envs: list[str] = _doc("Environment variables that models[].api_key_env may name "
                                       "besides the well-known provider keys (OPENAI_API_KEY...) "
                                       "and LAYA_*.", default_factory=list)
    route_log_size: int = _doc("Recent requests whose routing inputs (user text, tags, model, "
                               "path) are kept for the what-if replay; 0 keeps none.", default=1000)
    models_dir: str | None = _doc("Folder that `laya pull` and the model browser download into "
                                  "('~' allowed); null: the user's data folder "
                                  "(docs/models-download.md).", default=None)


@dataclass
class PromptCacheConfig:
    """Budgets of a model's prompt cache (runners/prompt_cache.py). The defaults hold an agent
    session's prompt state or two for a small model in RAM (a state is the prompt's KV cache:
    `laya models inspect` gives its bytes per token), and a working day's sessions on disk."""
    ram_mb: int = _doc("MiB of the runner's RAM for saved prompt states; 0 keeps none in RAM.",
                       default=1024)
    disk_mb: int = _doc("MiB of disk (the user's cache folder) for saved prompt states, which "
                        "outlive an unload and an engine restart; 0 writes none.", default=4096)


HEALTH_PROBES = ("none", "auto")   # or a path on the upstream, such as /health


@dataclass
class HealthConfig:
    """How a remote model is judged up or down (engine/replica_health.py). Passive: a run of
    failed requests ejects it for a backoff that doubles each time, then one request tries it
    again. Active (probe): a GET at an interval, which also brings an ejected one back early."""
    probe: str = _doc("none: requests alone judge it; auto: GET the API's models list "
                      "(/v1/models, which llama-server, vLLM, Ollama, LM Studio, OpenAI and "
                      "Anthropic all answer); or a path on the upstream's origin such as /health "
                      "(llama-server's).", default="none")
    interval_s: float = _doc("Seconds between probes (probe not none).", default=10)
    eject_after: int = _doc("Failures in a row (unreachable, 5xx, a probe's timeout) that eject it.",
                            default=3)
    backoff_s: float = _doc("Seconds the first ejection lasts; each one after doubles it.",
                            default=5)
    backoff_max_s: float = _doc("The longest an ejection lasts.", default=300)


@dataclass
class ModelConfig:
    name: str = _doc("Unique name; clients may ask for it directly in 'model'.")
    backend: str = _doc("llama_cpp | mlx | openai | anthropic.")
    path: str | None = _doc("A .gguf file, an MLX model folder, or builtin:NAME.", default=None)
    base_url: str | None = _doc("Remote API root, e.g. https://host/v1 (OpenAI-compatible or Anthropic).",
                                default=None)
    api_key_env: str | None = _doc("Environment variable holding the remote API key.", default=None)
    remote_model: str | None = _doc("Model name sent to the remote API (default: name).", default=None)
    n_ctx: int = _doc("Context tokens per sequence.", default=4096)
    parallel: int | None = _doc("Sequences served at once (default 4 for llama_cpp, 1 for mlx).",
                                default=None)
    max_output_tokens: int | None = _doc("Most tokens one answer may generate; a request asking for "
                                         "more, or for no limit, gets this many (null: up to n_ctx).",
                                         default=None)
    n_gpu_layers: int = _doc("Layers offloaded to the GPU; -1 for all.", default=0)
    n_threads: int | None = _doc("CPU threads for llama.cpp; null picks a default.", default=None)
    kv_cache_type: str = _doc("KV cache element type: f16 | q8_0 | q4_0.", default="f16")
    cpu_repack: bool = _doc("Repack quantized weights for ggml's CPU kernels, as llama-server does "
                            "by default: a few percent faster, but a greedy answer then depends on "
                            "how many requests share a step; false keeps it the same under any "
                            "load.", default=True)
    chat_format: str | None = _doc("Chat template override (a llama-cpp-python chat format name).",
                                   default=None)
    keep_in_memory: bool = _doc("Pinned: never unloaded by the memory guard or the idle TTL.",
                                default=False)
    idle_ttl_s: int = _doc("Unload after this many idle seconds; 0 = never.", default=900)
    warmup: bool = _doc("Load when the engine starts instead of on first request.", default=False)
    embedding: bool = _doc("This GGUF serves /v1/embeddings (pooling from the GGUF) instead of text.",
                           default=False)
    sampling: dict = _doc("Sampling defaults for this model (temperature, top_p, top_k, min_p, "
                          "repeat_penalty, repeat_last_n, frequency_penalty, presence_penalty, "
                          "dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n); a "
                          "request's own value wins.", default_factory=dict)
    responses: bool = _doc("The OpenAI-compatible upstream also has the Responses API: Responses "
                           "requests pass through natively.", default=False)
    slots: int | None = _doc("Requests the upstream serves at once (llama-server's --parallel); "
                             "more wait in its queue. null: learned from when its latency rises "
                             "(strategy min_latency, session affinity's limit).", default=None)
    health: HealthConfig = _doc("When the upstream counts as down and skipped: {probe, interval_s, "
                                "eject_after, backoff_s, backoff_max_s}.",
                                default_factory=HealthConfig)
    prompt_cache: PromptCacheConfig = _doc(
        "Prompt KV states kept beyond the slots, so that a long prompt read once (an agent's tools "
        "and instructions) is restored instead of read again, after an unload or an engine "
        "restart too: {ram_mb, disk_mb}; both 0 turns it off.",
        default_factory=PromptCacheConfig)

    @property
    def is_local(self) -> bool:
        return self.backend in LOCAL_BACKENDS

    @property
    def effective_parallel(self) -> int:
        if self.parallel is not None:
            return self.parallel
        return 4 if self.backend == "llama_cpp" else 1

    @property
    def effective_remote_model(self) -> str:
        return self.remote_model or self.name


SEMANTIC_SCORINGS = ("learned", "nearest")


@dataclass
class SemanticMatch:
    """Example prompts for a route: the user text must be near enough to one of them."""

    examples: list[str] = _doc("Prompts this route should take (at least one).", default_factory=list)
    negatives: list[str] = _doc("Prompts that look alike but belong elsewhere: the condition fails "
                                "when one of them is nearer than every example.",
                                default_factory=list)
    threshold: float | None = _doc("Cosine similarity (all-MiniLM-L6-v2) to the nearest example "
                                   "needed, between 0 and 1; null (auto): the score that only 1 % "
                                   "of the built-in background corpus reaches against this "
                                   "rule's examples.", default=None)
    top_k: int = _doc("The score is the mean similarity of this many nearest examples (1: the "
                      "nearest only); negatives and other routes are scored alike.", default=1)
    margin: float = _doc("How much the score must beat the negatives' score (scored alike), "
                         "between 0 and 1; 0: the negatives must not score higher (scoring "
                         "nearest only).", default=0.0)
    scoring: str = _doc("learned: a classifier fitted on every semantic rule's examples (the "
                        "negatives its 'none' class) picks the route, and the score must still "
                        "reach the threshold; nearest: the nearest examples decide, against the "
                        "negatives' score and the other rules'.", default="learned")
    min_probability: float = _doc("With scoring learned: the classifier's probability for this "
                                  "route needed, between 0 and 1.", default=0.5)


@dataclass
class RouteMatch:
    """All given conditions must hold; a list holds when any of its elements does."""

    tags: list[str] = _doc("Request tags (body 'tags' or header X-Laya-Tags).", default_factory=list)
    keywords: list[str] = _doc("Case-insensitive substrings of the user text.", default_factory=list)
    min_prompt_chars: int | None = _doc("At least this many characters in all messages.", default=None)
    max_prompt_chars: int | None = _doc("At most this many characters in all messages.", default=None)
    model: list[str] = _doc("The model name the client asked for (aliases such as gpt-4o).",
                            default_factory=list)
    path: list[str] = _doc("The request path exactly, e.g. /v1/completions.", default_factory=list)
    semantic: SemanticMatch | None = _doc("The user text is close to example prompts "
                                          "({examples, negatives, threshold}).", default=None)

    def is_empty(self) -> bool:
        return not (self.tags or self.keywords or self.model or self.path or self.semantic
                    or self.min_prompt_chars is not None or self.max_prompt_chars is not None)


AFFINITY_TTL_S = 1800
STRATEGIES = ("first_available", "warm", "least_loaded", "min_latency", "weighted", "spillover")


@dataclass
class RouteTarget:
    """One of a rule's `targets`: a bare model name, or {model, weight, max_active}."""

    model: str = _doc("A model name.")
    weight: float | None = _doc("Share of the requests (strategy weighted; default 1).", default=None)
    max_active: int | None = _doc("Requests in flight before the next target takes over (strategy "
                                  "spillover; default: no limit).", default=None)


@dataclass
class RouteConfig:
    name: str = _doc("Unique rule name, reported in X-Laya-Route.")
    target: str = _doc("The model that serves requests this rule matches (with `targets`: the "
                       "first of them).")
    enabled: bool = _doc("Disabled rules are skipped.", default=True)
    match: RouteMatch = _doc("Conditions; empty matches everything (a catch-all).",
                             default_factory=RouteMatch)
    fallback: list[str] = _doc("Models tried in order when the target cannot serve.",
                               default_factory=list)
    targets: list[RouteTarget] = _doc("Several models to share the rule's requests, chosen by "
                                      "`strategy` (`target`, when also given, comes first).",
                                      default_factory=list)
    strategy: str = _doc("first_available | warm | least_loaded | min_latency | weighted | "
                         "spillover: how the targets are chosen.", default="first_available")
    sampling: dict = _doc("Sampling defaults for the requests this rule sends to a local model, over "
                          "that model's own `sampling`; a request's own value wins.",
                          default_factory=dict)
    affinity: bool | None = _doc("Requests of one conversation go to the target that served it "
                                 "while it is up and under its limit (null: on when the rule has "
                                 "several targets).", default=None)
    affinity_ttl_s: int = _doc("Seconds a conversation stays with its target after its last "
                               "request.", default=AFFINITY_TTL_S)

    @property
    def affinity_on(self) -> bool:
        return self.affinity is not False and len(self.pool()) > 1

    def pool(self) -> list[RouteTarget]:
        """Every target of the rule in list order: `target` first unless `targets` names it."""
        named = [t.model for t in self.targets]
        head = [] if self.target in named else [RouteTarget(self.target)]
        return head + list(self.targets)


@dataclass
class SchedulerConfig:
    max_queue: int = _doc("Requests waiting per model; when full: next fallback, else 429.", default=64)
    queue_timeout_ms: int = _doc("Longest wait for a slot; then next fallback, else 503.", default=30000)


@dataclass
class MemoryConfig:
    guard: bool = _doc("Emergency release on or off.", default=True)
    reserved_system_gb: float = _doc("Keep at least this much RAM available (GiB).", default=2)
    ram_high_pct: float = _doc("Release when RAM use passes this percentage.", default=90)
    vram_high_pct: float = _doc("Release when VRAM use passes this percentage.", default=92)
    sample_hz: float = _doc("Telemetry samples per second.", default=4)


@dataclass
class Config:
    models: list[ModelConfig]
    routes: list[RouteConfig]
    server: ServerConfig = field(default_factory=ServerConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)

    def model(self, name: str) -> ModelConfig | None:
        for m in self.models:
            if m.name == name:
                return m
        return None
