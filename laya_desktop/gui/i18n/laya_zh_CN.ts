<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>OutsideChangeBar</name>
    <message>
        <source>The config was changed outside this window (models.yaml edited, or another client) while you have unapplied edits.</source>
        <translation>在您有未应用的编辑时，配置已在此窗口之外被更改（models.yaml 被编辑，或另一个客户端）。</translation>
    </message>
    <message>
        <source>Reload (drop my edits)</source>
        <translation>重新加载（放弃我的编辑）</translation>
    </message>
    <message>
        <source>Keep my edits</source>
        <translation>保留我的编辑</translation>
    </message>
</context>
<context>
    <name>AboutDialog</name>
    <message>
        <source>About Laya Desktop</source>
        <translation>关于 Laya Desktop</translation>
    </message>
    <message>
        <source>Licence…</source>
        <translation>许可证…</translation>
    </message>
    <message>
        <source>Third-party notices…</source>
        <translation>第三方声明…</translation>
    </message>
    <message>
        <source>Laya Desktop licence</source>
        <translation>Laya Desktop 许可证</translation>
    </message>
    <message>
        <source>Third-party notices</source>
        <translation>第三方声明</translation>
    </message>
    <message>
        <source>{name} is not in this installation</source>
        <translation>此安装中没有 {name}</translation>
    </message>
    <message>
        <source>Qt {qt} · PySide6 {pyside} · Python {python}</source>
        <translation>Qt {qt} · PySide6 {pyside} · Python {python}</translation>
    </message>
    <message>
        <source>A local model gateway with a control panel.</source>
        <translation>带控制面板的本地模型网关。</translation>
    </message>
    <message>
        <source>Laya Desktop is free software under the MIT licence.</source>
        <translation>Laya Desktop 是基于 MIT 许可证的自由软件。</translation>
    </message>
    <message>
        <source>It uses Qt and PySide6 under the GNU LGPL v3, and pyqtgraph, llama.cpp, llama-cpp-python, numpy and other libraries under their own licences.</source>
        <translation>它按 GNU LGPL v3 使用 Qt 和 PySide6，并按各自的许可证使用 pyqtgraph、llama.cpp、llama-cpp-python、numpy 等库。</translation>
    </message>
    <message>
        <source>Built-in models: Gemma 3 270M is provided under and subject to the Gemma Terms of Use (ai.google.dev/gemma/terms); SmolLM2-135M-Instruct is under the Apache License 2.0.</source>
        <translation>内置模型：Gemma 3 270M 依据并受限于 Gemma 使用条款（ai.google.dev/gemma/terms）提供；SmolLM2-135M-Instruct 采用 Apache License 2.0。</translation>
    </message>
</context>
<context>
    <name>ChatPanel</name>
    <message>
        <source>rule {rule}</source>
        <translation>规则 {rule}</translation>
    </message>
    <message>
        <source>model {model}</source>
        <translation>模型 {model}</translation>
    </message>
    <message>
        <source>stopped: it kept repeating itself</source>
        <translation>已停止：回复一直在重复</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>cut off: max tokens reached</source>
        <translation>已截断：达到最大 token 数</translation>
    </message>
    <message>
        <source>finish {reason}</source>
        <translation>结束原因 {reason}</translation>
    </message>
    <message>
        <source>tags, e.g. code</source>
        <translation>标签，例如 code</translation>
    </message>
    <message>
        <source>system prompt (optional)</source>
        <translation>系统提示词（可选）</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Tags</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>code copied</source>
        <translation>代码已复制</translation>
    </message>
    <message>
        <source>Message (Ctrl+Enter to send)</source>
        <translation>消息（Ctrl+Enter 发送）</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>ask for the last reply again</source>
        <translation>重新请求最后一条回复</translation>
    </message>
    <message>
        <source>Edit last</source>
        <translation>编辑上一条</translation>
    </message>
    <message>
        <source>put the last message back in the box to change and resend</source>
        <translation>把最后一条消息放回输入框，修改后重新发送</translation>
    </message>
    <message>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <source>Open…</source>
        <translation>打开…</translation>
    </message>
    <message>
        <source>Save…</source>
        <translation>保存…</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>copy the conversation as text</source>
        <translation>将对话复制为文本</translation>
    </message>
    <message>
        <source>auto — route by rules</source>
        <translation>auto — 按规则路由</translation>
    </message>
    <message>
        <source>waiting for the first token…</source>
        <translation>正在等待第一个 token…</translation>
    </message>
    <message>
        <source>error: {error}</source>
        <translation>错误：{error}</translation>
    </message>
    <message>
        <source>stopped: the reply kept repeating “{text}”</source>
        <translation>已停止：回复一直在重复“{text}”</translation>
    </message>
    <message>
        <source>opened {path}</source>
        <translation>已打开 {path}</translation>
    </message>
    <message>
        <source>Open conversation</source>
        <translation>打开对话</translation>
    </message>
    <message>
        <source>Laya chats (*.json)</source>
        <translation>Laya 对话 (*.json)</translation>
    </message>
    <message>
        <source>Save conversation</source>
        <translation>保存对话</translation>
    </message>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
</context>
<context>
    <name>EngineState</name>
    <message>
        <source>reading the config: {error}</source>
        <translation>读取配置：{error}</translation>
    </message>
    <message>
        <source>applying the config: {error}</source>
        <translation>应用配置：{error}</translation>
    </message>
</context>
<context>
    <name>DistributionView</name>
    <message>
        <source>last 5 minutes</source>
        <translation>最近 5 分钟</translation>
    </message>
    <message>
        <source>last hour</source>
        <translation>最近 1 小时</translation>
    </message>
    <message>
        <source>last 24 hours</source>
        <translation>最近 24 小时</translation>
    </message>
    <message>
        <source>Refresh</source>
        <translation>刷新</translation>
    </message>
    <message>
        <source>Rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求数</translation>
    </message>
    <message>
        <source>Share</source>
        <translation>占比</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>could not read the distribution: {error}</source>
        <translation>无法读取分布：{error}</translation>
    </message>
    <message>
        <source>{total} requests in the window.</source>
        <translation>时间窗口内共 {total} 个请求。</translation>
    </message>
    <message>
        <source>(The request log holds less than the window.)</source>
        <translation>（请求日志保存的时间短于该窗口。）</translation>
    </message>
    <message>
        <source>&lt;b&gt;{share:.0%} of them went to model {model}.&lt;/b&gt;</source>
        <translation>&lt;b&gt;其中 {share:.0%} 发往了模型 {model}。&lt;/b&gt;</translation>
    </message>
</context>
<context>
    <name>EngineController</name>
    <message>
        <source>the engine did not become healthy at {address}</source>
        <translation>{address} 上的引擎未能进入健康状态</translation>
    </message>
    <message>
        <source>started engine at {address}</source>
        <translation>已在 {address} 启动引擎</translation>
    </message>
    <message>
        <source>attached to engine at {address}</source>
        <translation>已连接到 {address} 上的引擎</translation>
    </message>
    <message>
        <source>the engine at this address is not ours to restart</source>
        <translation>此地址上的引擎不是本程序启动的，无法重启</translation>
    </message>
    <message>
        <source>the engine did not come back at {address}</source>
        <translation>{address} 上的引擎没有恢复</translation>
    </message>
</context>
<context>
    <name>LiveCurves</name>
    <message>
        <source>Latency</source>
        <translation>延迟</translation>
    </message>
    <message>
        <source>Time to first token</source>
        <translation>首个 token 时间</translation>
    </message>
    <message>
        <source>Inter-token latency</source>
        <translation>token 间延迟</translation>
    </message>
    <message>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
</context>
<context>
    <name>LoadTestPanel</name>
    <message>
        <source>load test aborted: the engine did not answer in time</source>
        <translation>压力测试已中止：引擎未及时响应</translation>
    </message>
    <message>
        <source>tags, comma-separated</source>
        <translation>标签，用逗号分隔</translation>
    </message>
    <message>
        <source>stream</source>
        <translation>流式</translation>
    </message>
    <message>
        <source>Run load test</source>
        <translation>运行压力测试</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Concurrency</source>
        <translation>并发数</translation>
    </message>
    <message>
        <source>short chat</source>
        <translation>简短对话</translation>
    </message>
    <message>
        <source>long context</source>
        <translation>长上下文</translation>
    </message>
    <message>
        <source>code (tag: code)</source>
        <translation>代码（标签：code）</translation>
    </message>
    <message>
        <source>mixed</source>
        <translation>混合</translation>
    </message>
    <message>
        <source>from a JSONL file…</source>
        <translation>来自 JSONL 文件…</translation>
    </message>
    <message>
        <source>Rate (requests/s, Poisson)</source>
        <translation>速率（请求/秒，泊松到达）</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求数</translation>
    </message>
    <message>
        <source>Duration</source>
        <translation>时长</translation>
    </message>
    <message>
        <source>Save JSON…</source>
        <translation>保存 JSON…</translation>
    </message>
    <message>
        <source>Save CSV…</source>
        <translation>保存 CSV…</translation>
    </message>
    <message>
        <source>Save PNG…</source>
        <translation>保存 PNG…</translation>
    </message>
    <message>
        <source>Max tokens</source>
        <translation>最大 token 数</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>负载</translation>
    </message>
    <message>
        <source>Tags</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Prompts</source>
        <translation>提示词</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>目标</translation>
    </message>
    <message>
        <source>prompt lengths in characters, comma-separated, say 0, 4000</source>
        <translation>提示词长度（字符），用逗号分隔，例如 0, 4000</translation>
    </message>
    <message>
        <source>4 × clients</source>
        <translation>4 × 客户端数</translation>
    </message>
    <message>
        <source>Run sweep</source>
        <translation>运行扫描</translation>
    </message>
    <message>
        <source>Up to clients</source>
        <translation>最多客户端</translation>
    </message>
    <message>
        <source>Prompt lengths</source>
        <translation>提示词长度</translation>
    </message>
    <message>
        <source>TTFT p95 target</source>
        <translation>TTFT p95 目标</translation>
    </message>
    <message>
        <source>Requests a step</source>
        <translation>每步请求数</translation>
    </message>
    <message>
        <source>Live</source>
        <translation>实时</translation>
    </message>
    <message>
        <source>Results</source>
        <translation>结果</translation>
    </message>
    <message>
        <source>Capacity sweep</source>
        <translation>容量扫描</translation>
    </message>
    <message>
        <source>Prompts, one JSON object a line</source>
        <translation>提示词，每行一个 JSON 对象</translation>
    </message>
    <message>
        <source>JSONL files (*.jsonl);;All files (*)</source>
        <translation>JSONL 文件 (*.jsonl);;所有文件 (*)</translation>
    </message>
    <message>
        <source>choose a JSONL file of prompts</source>
        <translation>请选择一个提示词 JSONL 文件</translation>
    </message>
    <message>
        <source>load test not started: {error}</source>
        <translation>负载测试未开始：{error}</translation>
    </message>
    <message>
        <source>running… {done} done, {errors} failed</source>
        <translation>运行中… 已完成 {done}，失败 {errors}</translation>
    </message>
    <message>
        <source>done: {n} requests, {errors} failed</source>
        <translation>完成：{n} 个请求，{errors} 个失败</translation>
    </message>
    <message>
        <source>sweep done: {n} steps</source>
        <translation>扫描完成：{n} 步</translation>
    </message>
    <message>
        <source>sweep failed: {error}</source>
        <translation>扫描失败：{error}</translation>
    </message>
    <message>
        <source>JSON files (*.json)</source>
        <translation>JSON 文件 (*.json)</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>CSV 文件 (*.csv)</translation>
    </message>
    <message>
        <source>PNG images (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <source>Save the load test report</source>
        <translation>保存负载测试报告</translation>
    </message>
    <message>
        <source>running…</source>
        <translation>运行中…</translation>
    </message>
    <message>
        <source>prompt lengths cannot be negative</source>
        <translation>提示词长度不能为负数</translation>
    </message>
    <message>
        <source>sweep not started: {error}</source>
        <translation>扫描未开始：{error}</translation>
    </message>
    <message>
        <source>sweeping…</source>
        <translation>扫描中…</translation>
    </message>
    <message>
        <source>stopping…</source>
        <translation>正在停止…</translation>
    </message>
    <message>
        <source>load test failed: {error}</source>
        <translation>压力测试失败：{error}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>&amp;Keep serving in the tray when the window closes</source>
        <translation>关闭窗口时在托盘中继续服务(&amp;K)</translation>
    </message>
    <message>
        <source>This desktop has no system tray</source>
        <translation>此桌面没有系统托盘</translation>
    </message>
    <message>
        <source>The config was changed outside this window (models.yaml edited, or another client); the panels show it now.</source>
        <translation>配置已在此窗口之外被更改（models.yaml 被编辑，或另一个客户端）；各面板现已显示新配置。</translation>
    </message>
    <message>
        <source>Engine stopped</source>
        <translation>引擎已停止</translation>
    </message>
    <message>
        <source>The engine that Laya Desktop started has stopped unexpectedly. Start it again?</source>
        <translation>Laya Desktop 启动的引擎意外停止。要重新启动它吗？</translation>
    </message>
    <message>
        <source>Restart engine</source>
        <translation>重启引擎</translation>
    </message>
    <message>
        <source>Not now</source>
        <translation>暂不</translation>
    </message>
    <message>
        <source>Laya Desktop — {path}</source>
        <translation>Laya Desktop — {path}</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Routes</source>
        <translation>路由</translation>
    </message>
    <message>
        <source>Monitor</source>
        <translation>监控</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Load test</source>
        <translation>压力测试</translation>
    </message>
    <message>
        <source>&amp;Engine</source>
        <translation>引擎(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;Restart engine</source>
        <translation>重启引擎(&amp;R)</translation>
    </message>
    <message>
        <source>Open &amp;log folder</source>
        <translation>打开日志文件夹(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;About Laya Desktop</source>
        <translation>关于 Laya Desktop(&amp;A)</translation>
    </message>
    <message>
        <source>The language changes the next time Laya Desktop starts.</source>
        <translation>语言将在下次启动 Laya Desktop 时生效。</translation>
    </message>
    <message>
        <source>models loaded: {loaded}/{total}</source>
        <translation>已加载模型：{loaded}/{total}</translation>
    </message>
    <message>
        <source>RAM: {used} / {total}</source>
        <translation>内存：{used} / {total}</translation>
    </message>
    <message>
        <source>up</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>down</source>
        <translation>未运行</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>启动中</translation>
    </message>
    <message>
        <source>engine: {state}</source>
        <translation>引擎：{state}</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求</translation>
    </message>
</context>
<context>
    <name>MlxFolder</name>
    <message>
        <source>choose the model folder first</source>
        <translation>请先选择模型文件夹</translation>
    </message>
    <message>
        <source>(add a .gguf file as a GGUF model)</source>
        <translation>（.gguf 文件请作为 GGUF 模型添加）</translation>
    </message>
    <message>
        <source>{path} is a file; an MLX model is a folder with config.json and *.safetensors</source>
        <translation>{path} 是一个文件；MLX 模型是包含 config.json 和 *.safetensors 的文件夹</translation>
    </message>
    <message>
        <source>(it holds .gguf files: add them as GGUF models)</source>
        <translation>（其中有 .gguf 文件：请作为 GGUF 模型添加）</translation>
    </message>
    <message>
        <source>no *.safetensors weights in {path}</source>
        <translation>{path} 中没有 *.safetensors 权重</translation>
    </message>
    <message>
        <source>no tokenizer file (tokenizer.json or tokenizer.model): mlx-lm may fail to load it</source>
        <translation>没有分词器文件（tokenizer.json 或 tokenizer.model）：mlx-lm 可能无法加载</translation>
    </message>
    <message>
        <source>no config.json in {path}</source>
        <translation>{path} 中没有 config.json</translation>
    </message>
    <message>
        <source>config.json cannot be read: {error}</source>
        <translation>无法读取 config.json：{error}</translation>
    </message>
    <message>
        <source>config.json does not hold a JSON object</source>
        <translation>config.json 的内容不是 JSON 对象</translation>
    </message>
</context>
<context>
    <name>ModelDialog</name>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Edit GGUF model</source>
        <translation>编辑 GGUF 模型</translation>
    </message>
    <message>
        <source>Add GGUF model</source>
        <translation>添加 GGUF 模型</translation>
    </message>
    <message>
        <source>Edit MLX model</source>
        <translation>编辑 MLX 模型</translation>
    </message>
    <message>
        <source>Add MLX model</source>
        <translation>添加 MLX 模型</translation>
    </message>
    <message>
        <source>Edit remote endpoint</source>
        <translation>编辑远程端点</translation>
    </message>
    <message>
        <source>Add remote endpoint</source>
        <translation>添加远程端点</translation>
    </message>
    <message>
        <source>environment variable holding the key, e.g. OPENAI_API_KEY</source>
        <translation>保存密钥的环境变量，例如 OPENAI_API_KEY</translation>
    </message>
    <message>
        <source>Base URL</source>
        <translation>基础 URL</translation>
    </message>
    <message>
        <source>OpenAI-compatible (chat completions)</source>
        <translation>OpenAI 兼容（Chat Completions）</translation>
    </message>
    <message>
        <source>Anthropic (Messages)</source>
        <translation>Anthropic（Messages）</translation>
    </message>
    <message>
        <source>the upstream also has the Responses API (Responses requests pass through)</source>
        <translation>上游也提供 Responses API（Responses 请求直接转发）</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>Remote model</source>
        <translation>远程模型</translation>
    </message>
    <message>
        <source>Key variable</source>
        <translation>密钥变量</translation>
    </message>
    <message>
        <source>Test connection</source>
        <translation>测试连接</translation>
    </message>
    <message>
        <source>environment variable holding the key, e.g. ANTHROPIC_API_KEY</source>
        <translation>保存密钥的环境变量，例如 ANTHROPIC_API_KEY</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>GGUF file</source>
        <translation>GGUF 文件</translation>
    </message>
    <message>
        <source>MLX folder</source>
        <translation>MLX 文件夹</translation>
    </message>
    <message>
        <source>keep in memory (pinned)</source>
        <translation>常驻内存（固定）</translation>
    </message>
    <message>
        <source>load when the engine starts</source>
        <translation>引擎启动时加载</translation>
    </message>
    <message>
        <source>Context (tokens/seq)</source>
        <translation>上下文（每序列 token 数）</translation>
    </message>
    <message>
        <source>Parallel sequences</source>
        <translation>并行序列数</translation>
    </message>
    <message>
        <source>GPU layers (-1 all)</source>
        <translation>GPU 层数（-1 为全部）</translation>
    </message>
    <message>
        <source>KV cache type</source>
        <translation>KV 缓存类型</translation>
    </message>
    <message>
        <source>repack weights for the CPU (faster batches; a greedy answer then depends on the load)</source>
        <translation>为 CPU 重排权重（批处理更快；贪心解码的回答会随负载而变）</translation>
    </message>
    <message>
        <source>Inspect</source>
        <translation>检查</translation>
    </message>
    <message>
        <source>Idle TTL (s, 0 never)</source>
        <translation>空闲卸载时间（秒，0 为从不）</translation>
    </message>
    <message>
        <source>GGUF model</source>
        <translation>GGUF 模型</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <source>MLX model folder</source>
        <translation>MLX 模型文件夹</translation>
    </message>
    <message>
        <source>reading the GGUF header…</source>
        <translation>正在读取 GGUF 文件头…</translation>
    </message>
    <message>
        <source>reading the MLX folder…</source>
        <translation>正在读取 MLX 文件夹…</translation>
    </message>
    <message>
        <source>cannot use this file: {error}</source>
        <translation>无法使用此文件：{error}</translation>
    </message>
    <message>
        <source>cannot use this folder: {error}</source>
        <translation>无法使用此文件夹：{error}</translation>
    </message>
    <message>
        <source>connecting…</source>
        <translation>正在连接…</translation>
    </message>
    <message>
        <source>OK: {n} models</source>
        <translation>成功：{n} 个模型</translation>
    </message>
    <message>
        <source>connection failed: {error}</source>
        <translation>连接失败：{error}</translation>
    </message>
    <message>
        <source>a name is required</source>
        <translation>必须填写名称</translation>
    </message>
    <message>
        <source>a model named &apos;{name}&apos; already exists: choose another name</source>
        <translation>已存在名为 &apos;{name}&apos; 的模型：请换一个名称</translation>
    </message>
</context>
<context>
    <name>ModelInspect</name>
    <message>
        <source>Architecture: {value}</source>
        <translation>架构：{value}</translation>
    </message>
    <message>
        <source>Parameters: {value}</source>
        <translation>参数量：{value}</translation>
    </message>
    <message>
        <source>Quantization: {value}</source>
        <translation>量化：{value}</translation>
    </message>
    <message>
        <source>Context length: {value}</source>
        <translation>上下文长度：{value}</translation>
    </message>
    <message>
        <source>Weights: {size} in {files} safetensors file(s) ({quantization})</source>
        <translation>权重：{size}，共 {files} 个 safetensors 文件（{quantization}）</translation>
    </message>
    <message>
        <source>Warning: {text}</source>
        <translation>警告：{text}</translation>
    </message>
    <message>
        <source>Memory estimate: ?</source>
        <translation>内存估算：?</translation>
    </message>
    <message>
        <source>Memory estimate: {total} of RAM in total =</source>
        <translation>内存估算：共需 {total} 内存 =</translation>
    </message>
    <message>
        <source>weights {size}</source>
        <translation>权重 {size}</translation>
    </message>
    <message>
        <source>({tokens} tokens × {size} per token)</source>
        <translation>（{tokens} 个 token × 每个 token {size}）</translation>
    </message>
    <message>
        <source>KV cache {size}</source>
        <translation>KV 缓存 {size}</translation>
    </message>
    <message>
        <source>compute {size} (the resident part)</source>
        <translation>计算缓冲 {size}（常驻部分）</translation>
    </message>
    <message>
        <source>overhead {size}</source>
        <translation>额外开销 {size}</translation>
    </message>
    <message>
        <source>(the runner process: {size} of it)</source>
        <translation>（其中运行进程占 {size}）</translation>
    </message>
    <message>
        <source>Compute buffer reserved (virtual, mostly untouched): {size}, not in the total</source>
        <translation>预留的计算缓冲（虚拟内存，大多未使用）：{size}，不计入总数</translation>
    </message>
    <message>
        <source>VRAM: {size} (offloaded layers, their KV, GPU compute)</source>
        <translation>显存：{size}（卸载到 GPU 的层、其 KV 缓存及 GPU 计算）</translation>
    </message>
</context>
<context>
    <name>ModelsPanel</name>
    <message>
        <source>Get models…</source>
        <translation>获取模型…</translation>
    </message>
    <message>
        <source>Add GGUF…</source>
        <translation>添加 GGUF…</translation>
    </message>
    <message>
        <source>Add MLX…</source>
        <translation>添加 MLX…</translation>
    </message>
    <message>
        <source>Add remote…</source>
        <translation>添加远程…</translation>
    </message>
    <message>
        <source>Edit…</source>
        <translation>编辑…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>加载</translation>
    </message>
    <message>
        <source>Unload</source>
        <translation>卸载</translation>
    </message>
    <message>
        <source>Warm up</source>
        <translation>预热</translation>
    </message>
    <message>
        <source>Pin / unpin</source>
        <translation>固定 / 取消固定</translation>
    </message>
    <message>
        <source>Clear cache</source>
        <translation>清除缓存</translation>
    </message>
    <message>
        <source>select a model first</source>
        <translation>请先选择一个模型</translation>
    </message>
    <message>
        <source>a model named &apos;{name}&apos; already exists</source>
        <translation>已存在名为 &apos;{name}&apos; 的模型</translation>
    </message>
    <message>
        <source>add refused, nothing sent: {error}</source>
        <translation>添加被拒绝，未发送任何内容：{error}</translation>
    </message>
    <message>
        <source>remote models hold no local memory to pin</source>
        <translation>远程模型不占用本地内存，无需固定</translation>
    </message>
    <message>
        <source>add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <source>remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>pin</source>
        <translation>固定</translation>
    </message>
    <message>
        <source>load</source>
        <translation>加载</translation>
    </message>
    <message>
        <source>unload</source>
        <translation>卸载</translation>
    </message>
    <message>
        <source>warm up</source>
        <translation>预热</translation>
    </message>
    <message>
        <source>clear the prompt cache of</source>
        <translation>清除提示缓存：</translation>
    </message>
    <message>
        <source>{action}: sending the config to the engine…</source>
        <translation>{action}：正在将配置发送到引擎…</translation>
    </message>
    <message>
        <source>{action}: applied</source>
        <translation>{action}：已应用</translation>
    </message>
    <message>
        <source>{action} refused, nothing changed:</source>
        <translation>{action}被拒绝，未做任何更改：</translation>
    </message>
    <message>
        <source>{action} {name}…</source>
        <translation>{action} {name}…</translation>
    </message>
    <message>
        <source>{action} {name}: done</source>
        <translation>{action} {name}：完成</translation>
    </message>
    <message>
        <source>{action} {name} failed: {error}</source>
        <translation>{action} {name} 失败：{error}</translation>
    </message>
</context>
<context>
    <name>MonitorPanel</name>
    <message>
        <source>runner killed, not answering</source>
        <translation>运行进程无响应，已终止</translation>
    </message>
    <message>
        <source>config not saved</source>
        <translation>配置未保存</translation>
    </message>
    <message>
        <source>upstream down, skipped</source>
        <translation>上游不可用，已跳过</translation>
    </message>
    <message>
        <source>upstream back</source>
        <translation>上游已恢复</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>private</source>
        <translation>私有</translation>
    </message>
    <message>
        <source>mapped</source>
        <translation>映射</translation>
    </message>
    <message>
        <source>KV used</source>
        <translation>KV 已用</translation>
    </message>
    <message>
        <source>KV bytes</source>
        <translation>KV 字节</translation>
    </message>
    <message>
        <source>Active</source>
        <translation>活动</translation>
    </message>
    <message>
        <source>Queued</source>
        <translation>排队</translation>
    </message>
    <message>
        <source>loading</source>
        <translation>加载中</translation>
    </message>
    <message>
        <source>loaded</source>
        <translation>已加载</translation>
    </message>
    <message>
        <source>unloaded</source>
        <translation>未加载</translation>
    </message>
    <message>
        <source>idle unload</source>
        <translation>空闲卸载</translation>
    </message>
    <message>
        <source>emergency unload</source>
        <translation>紧急卸载</translation>
    </message>
    <message>
        <source>runner crashed</source>
        <translation>运行进程崩溃</translation>
    </message>
    <message>
        <source>load refused</source>
        <translation>拒绝加载</translation>
    </message>
    <message>
        <source>load failed</source>
        <translation>加载失败</translation>
    </message>
    <message>
        <source>config applied</source>
        <translation>配置已应用</translation>
    </message>
    <message>
        <source>config rejected</source>
        <translation>配置被拒绝</translation>
    </message>
    <message>
        <source>Runners: private and mapped</source>
        <translation>运行器：私有与映射内存</translation>
    </message>
    <message>
        <source>Swap used</source>
        <translation>已用交换空间</translation>
    </message>
    <message>
        <source>VRAM</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>Swap in/out</source>
        <translation>交换换入/换出</translation>
    </message>
    <message>
        <source>KV cache used</source>
        <translation>KV 缓存占用</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV 缓存</translation>
    </message>
    <message>
        <source>Requests active / queued</source>
        <translation>活动 / 排队请求</translation>
    </message>
    <message>
        <source>Tokens per second</source>
        <translation>每秒 token 数</translation>
    </message>
    <message>
        <source>No NVIDIA GPU: VRAM is not measured on this machine</source>
        <translation>没有 NVIDIA GPU：本机不测量显存</translation>
    </message>
    <message>
        <source>{n} min</source>
        <translation>{n} 分钟</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Export PNG…</source>
        <translation>导出 PNG…</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>Window:</source>
        <translation>时间窗口：</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>guard: keep {gb:g} GiB available</source>
        <translation>保护：保留 {gb:g} GiB 可用</translation>
    </message>
    <message>
        <source>guard: RAM used {pct:g} %</source>
        <translation>保护：内存使用 {pct:g} %</translation>
    </message>
    <message>
        <source>guard: VRAM {pct:g} %</source>
        <translation>保护：显存 {pct:g} %</translation>
    </message>
    <message>
        <source>no NVIDIA GPU</source>
        <translation>无 NVIDIA GPU</translation>
    </message>
    <message>
        <source>&lt;b&gt;Guard&lt;/b&gt; {left} above the floor</source>
        <translation>&lt;b&gt;保护&lt;/b&gt; 距下限还有 {left}</translation>
    </message>
    <message>
        <source>Export the plots as PNG</source>
        <translation>将图表导出为 PNG</translation>
    </message>
    <message>
        <source>Export the samples as CSV</source>
        <translation>将样本导出为 CSV</translation>
    </message>
    <message>
        <source>PNG images (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>CSV 文件 (*.csv)</translation>
    </message>
    <message>
        <source>waiting for telemetry…</source>
        <translation>正在等待遥测数据…</translation>
    </message>
    <message>
        <source>RAM used</source>
        <translation>已用内存</translation>
    </message>
    <message>
        <source>RAM available</source>
        <translation>可用内存</translation>
    </message>
    <message>
        <source>swap used</source>
        <translation>已用交换空间</translation>
    </message>
    <message>
        <source>swap in</source>
        <translation>换入</translation>
    </message>
    <message>
        <source>swap out</source>
        <translation>换出</translation>
    </message>
    <message>
        <source>{model} private</source>
        <translation>{model} 私有</translation>
    </message>
    <message>
        <source>{model} mapped</source>
        <translation>{model} 映射</translation>
    </message>
    <message>
        <source>{model} MLX active</source>
        <translation>{model} MLX 活动内存</translation>
    </message>
    <message>
        <source>{model} VRAM</source>
        <translation>{model} 显存</translation>
    </message>
    <message>
        <source>{model} prompt cache, RAM</source>
        <translation>{model} 提示缓存（内存）</translation>
    </message>
    <message>
        <source>{model} prompt cache, disk</source>
        <translation>{model} 提示缓存（磁盘）</translation>
    </message>
    <message>
        <source>{model} active</source>
        <translation>{model} 活动</translation>
    </message>
    <message>
        <source>{model} queued</source>
        <translation>{model} 排队</translation>
    </message>
    <message>
        <source>GPU {index} used</source>
        <translation>GPU {index} 已用</translation>
    </message>
    <message>
        <source>no telemetry from the engine yet ({reason})</source>
        <translation>尚未收到引擎的遥测数据（{reason}）</translation>
    </message>
    <message>
        <source>&lt;b&gt;RAM&lt;/b&gt; {used} used of {total}, {available} available</source>
        <translation>&lt;b&gt;内存&lt;/b&gt; 已用 {used} / 共 {total}，可用 {available}</translation>
    </message>
    <message>
        <source>&lt;b&gt;Swap&lt;/b&gt; {used} of {total} (in {rate_in}/s, out {rate_out}/s)</source>
        <translation>&lt;b&gt;交换空间&lt;/b&gt; {used} / {total}（换入 {rate_in}/s，换出 {rate_out}/s）</translation>
    </message>
</context>
<context>
    <name>RegistryModel</name>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>KV used</source>
        <translation>KV 已用</translation>
    </message>
    <message>
        <source>Prompt cache</source>
        <translation>提示缓存</translation>
    </message>
    <message>
        <source>{ram} RAM, {disk} disk</source>
        <translation>内存 {ram}，磁盘 {disk}</translation>
    </message>
    <message>
        <source>Pinned</source>
        <translation>固定</translation>
    </message>
    <message>
        <source>Last used</source>
        <translation>上次使用</translation>
    </message>
    <message>
        <source>Source</source>
        <translation>来源</translation>
    </message>
    <message>
        <source>ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>busy</source>
        <translation>忙碌</translation>
    </message>
    <message>
        <source>loading</source>
        <translation>加载中</translation>
    </message>
    <message>
        <source>error</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>stopping</source>
        <translation>正在停止</translation>
    </message>
    <message>
        <source>unloaded</source>
        <translation>未加载</translation>
    </message>
    <message>
        <source>remote</source>
        <translation>远程</translation>
    </message>
    <message>
        <source>never</source>
        <translation>从未</translation>
    </message>
    <message>
        <source>{n} s ago</source>
        <translation>{n} 秒前</translation>
    </message>
    <message>
        <source>{n} min ago</source>
        <translation>{n} 分钟前</translation>
    </message>
    <message>
        <source>{n} h ago</source>
        <translation>{n} 小时前</translation>
    </message>
    <message>
        <source>error: {error}</source>
        <translation>错误：{error}</translation>
    </message>
    <message>
        <source>ejected: {error}</source>
        <translation>已剔除：{error}</translation>
    </message>
    <message>
        <source>ejected</source>
        <translation>已剔除</translation>
    </message>
    <message>
        <source>up</source>
        <translation>正常</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>{used} / {capacity} tok</source>
        <translation>{used} / {capacity} token</translation>
    </message>
    <message>
        <source>yes</source>
        <translation>是</translation>
    </message>
</context>
<context>
    <name>RequestLogModel</name>
    <message>
        <source>Time</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>API</source>
        <translation>API</translation>
    </message>
    <message>
        <source>Rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Fallback</source>
        <translation>回退</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Tokens</source>
        <translation>令牌</translation>
    </message>
    <message>
        <source>Duration</source>
        <translation>耗时</translation>
    </message>
    <message>
        <source>Session</source>
        <translation>会话</translation>
    </message>
    <message>
        <source>{session} (same target)</source>
        <translation>{session}（同一目标）</translation>
    </message>
    <message>
        <source>{session} (by strategy)</source>
        <translation>{session}（按策略）</translation>
    </message>
    <message>
        <source>session key from: {source}</source>
        <translation>会话键来源：{source}</translation>
    </message>
    <message>
        <source>{prompt} ({cached} cached) → {completion}</source>
        <translation>{prompt}（{cached} 已缓存）→ {completion}</translation>
    </message>
    <message>
        <source>from {model}</source>
        <translation>来自 {model}</translation>
    </message>
</context>
<context>
    <name>RequestWhy</name>
    <message>
        <source>Request #{seq} at {time}: {path} ({api})</source>
        <translation>请求 #{seq}，{time}：{path}（{api}）</translation>
    </message>
    <message>
        <source>The client named the model {model}: no rule was consulted.</source>
        <translation>客户端指定了模型 {model}：未查询任何规则。</translation>
    </message>
    <message>
        <source>Rule {rule} sent it to {model}; the answer was {status}.</source>
        <translation>规则 {rule} 将其发送到 {model}；响应状态为 {status}。</translation>
    </message>
    <message>
        <source>no model</source>
        <translation>无模型</translation>
    </message>
    <message>
        <source>No rule routed it; the answer was {status}.</source>
        <translation>没有规则路由该请求；响应状态为 {status}。</translation>
    </message>
    <message>
        <source>The engine recorded no routing detail for this request.</source>
        <translation>引擎没有记录此请求的路由详情。</translation>
    </message>
    <message>
        <source>Why it matched:</source>
        <translation>匹配原因：</translation>
    </message>
    <message>
        <source>Earlier rules passed over:</source>
        <translation>跳过的前序规则：</translation>
    </message>
    <message>
        <source>… and {n} more</source>
        <translation>……另有 {n} 条</translation>
    </message>
    <message>
        <source>It is the first rule that holds: no earlier rule was passed over.</source>
        <translation>这是第一条成立的规则：没有跳过前面的规则。</translation>
    </message>
    <message>
        <source>Candidates, in the order tried: {models}</source>
        <translation>候选模型（按尝试顺序）：{models}</translation>
    </message>
    <message>
        <source>{model} could not serve it ({code})</source>
        <translation>{model} 无法处理（{code}）</translation>
    </message>
    <message>
        <source>Served by the fallback {model} instead of {target}.</source>
        <translation>由回退模型 {model} 代替 {target} 处理。</translation>
    </message>
    <message>
        <source>Tokens: {tokens}; time to first token {ttft}; duration {duration}</source>
        <translation>令牌：{tokens}；首个令牌用时 {ttft}；耗时 {duration}</translation>
    </message>
</context>
<context>
    <name>RequestsPanel</name>
    <message>
        <source>Rule:</source>
        <translation>规则：</translation>
    </message>
    <message>
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <source>Status:</source>
        <translation>状态：</translation>
    </message>
    <message>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Select a request to see where it went and why.</source>
        <translation>选择一个请求，查看它被发往何处以及原因。</translation>
    </message>
    <message>
        <source>Cannot read the request log: {error}</source>
        <translation>无法读取请求日志：{error}</translation>
    </message>
    <message>
        <source>{shown} of {total} requests</source>
        <translation>显示 {shown} / 共 {total} 个请求</translation>
    </message>
</context>
<context>
    <name>ReplicaTable</name>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求数</translation>
    </message>
    <message>
        <source>Share</source>
        <translation>占比</translation>
    </message>
    <message>
        <source>Latency p50</source>
        <translation>延迟 p50</translation>
    </message>
    <message>
        <source>Latency p95</source>
        <translation>延迟 p95</translation>
    </message>
    <message>
        <source>TTFT p95</source>
        <translation>首个 token 时间 p95</translation>
    </message>
    <message>
        <source>Errors</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Requests by the model that answered them (after any fallback)</source>
        <translation>按实际应答的模型（含回退后）统计的请求</translation>
    </message>
</context>
<context>
    <name>ResultsView</name>
    <message>
        <source>Latency</source>
        <translation>延迟</translation>
    </message>
    <message>
        <source>Time to first token</source>
        <translation>首个 token 时间</translation>
    </message>
    <message>
        <source>Inter-token latency</source>
        <translation>token 间延迟</translation>
    </message>
    <message>
        <source>rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>rule → model</source>
        <translation>规则 → 模型</translation>
    </message>
    <message>
        <source>fallback</source>
        <translation>回退</translation>
    </message>
    <message>
        <source>Figure</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类别</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求数</translation>
    </message>
    <message>
        <source>Share</source>
        <translation>占比</translation>
    </message>
    <message>
        <source>Cause</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Latency histogram</source>
        <translation>延迟直方图</translation>
    </message>
    <message>
        <source>requests</source>
        <translation>请求数</translation>
    </message>
    <message>
        <source>{n} requests, {ok} ok, {errors} failed in {wall:.1f} s — {rps:.2f} requests/s, {tps:.1f} tokens/s ({tokens} completion tokens)</source>
        <translation>{n} 个请求，{ok} 个成功，{errors} 个失败，用时 {wall:.1f} 秒 — {rps:.2f} 请求/秒，{tps:.1f} tokens/秒（{tokens} 个补全 token）</translation>
    </message>
</context>
<context>
    <name>RoutesPanel</name>
    <message>
        <source>not applied: the config changed outside this window since your edits began</source>
        <translation>未应用：自您开始编辑以来，配置已在此窗口之外被更改</translation>
    </message>
    <message>
        <source>Semantic</source>
        <translation>语义</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>Duplicate</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Enable/Disable</source>
        <translation>启用/停用</translation>
    </message>
    <message>
        <source>Undo</source>
        <translation>撤销</translation>
    </message>
    <message>
        <source>Redo</source>
        <translation>重做</translation>
    </message>
    <message>
        <source>Apply</source>
        <translation>应用</translation>
    </message>
    <message>
        <source>Revert</source>
        <translation>还原</translation>
    </message>
    <message>
        <source>Rules, in order — the first rule whose conditions all hold wins. Drag to reorder.</source>
        <translation>规则按顺序排列 — 第一条条件全部满足的规则生效。拖动可调整顺序。</translation>
    </message>
    <message>
        <source>undo {change}</source>
        <translation>撤销 {change}</translation>
    </message>
    <message>
        <source>redo {change}</source>
        <translation>重做 {change}</translation>
    </message>
    <message>
        <source>Try a request (explained by the engine against the applied rules)</source>
        <translation>试一个请求（由引擎依据已应用的规则解释）</translation>
    </message>
    <message>
        <source>prompt text</source>
        <translation>提示词文本</translation>
    </message>
    <message>
        <source>tags, comma-separated</source>
        <translation>标签，用逗号分隔</translation>
    </message>
    <message>
        <source>model asked for (empty = auto)</source>
        <translation>请求的模型（留空 = auto）</translation>
    </message>
    <message>
        <source>Explain</source>
        <translation>解释</translation>
    </message>
    <message>
        <source>Prompt</source>
        <translation>提示词</translation>
    </message>
    <message>
        <source>Tags</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>unapplied changes</source>
        <translation>有未应用的更改</translation>
    </message>
    <message>
        <source>applied</source>
        <translation>已应用</translation>
    </message>
    <message>
        <source>applying…</source>
        <translation>正在应用…</translation>
    </message>
    <message>
        <source>applied and saved by the engine</source>
        <translation>已由引擎应用并保存</translation>
    </message>
    <message>
        <source>refused, nothing changed:</source>
        <translation>被拒绝，未做任何更改：</translation>
    </message>
    <message>
        <source>asking the engine…</source>
        <translation>正在询问引擎…</translation>
    </message>
    <message>
        <source>&lt;b&gt;Direct:&lt;/b&gt; the request names model &lt;b&gt;{model}&lt;/b&gt;; rules are not consulted.</source>
        <translation>&lt;b&gt;直接：&lt;/b&gt;请求指定了模型 &lt;b&gt;{model}&lt;/b&gt;；不经过规则。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Rule:&lt;/b&gt; {rule} &amp;nbsp; &lt;b&gt;Target:&lt;/b&gt; {target}</source>
        <translation>&lt;b&gt;规则：&lt;/b&gt;{rule} &amp;nbsp; &lt;b&gt;目标：&lt;/b&gt;{target}</translation>
    </message>
    <message>
        <source>&lt;b&gt;No rule matches&lt;/b&gt; (the request would get 404 model_not_found).</source>
        <translation>&lt;b&gt;没有匹配的规则&lt;/b&gt;（该请求会得到 404 model_not_found）。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Fallbacks:&lt;/b&gt; {models}</source>
        <translation>&lt;b&gt;备选：&lt;/b&gt;{models}</translation>
    </message>
    <message>
        <source>&lt;i&gt;Note: you have unapplied changes; this explains the applied rules.&lt;/i&gt;</source>
        <translation>&lt;i&gt;注意：你有未应用的更改；这里解释的是已应用的规则。&lt;/i&gt;</translation>
    </message>
    <message>
        <source>explain failed: {error}</source>
        <translation>解释失败：{error}</translation>
    </message>
    <message>
        <source>What if…</source>
        <translation>假如…</translation>
    </message>
    <message>
        <source>Replay recent requests against the edited rules and show what would change, without applying</source>
        <translation>用编辑后的规则重放最近的请求，显示会有哪些变化，但不应用</translation>
    </message>
    <message>
        <source>Try a request</source>
        <translation>试一个请求</translation>
    </message>
    <message>
        <source>Distribution</source>
        <translation>分布</translation>
    </message>
</context>
<context>
    <name>RuleCommands</name>
    <message>
        <source>add rule &apos;{name}&apos;</source>
        <translation>添加规则 &apos;{name}&apos;</translation>
    </message>
    <message>
        <source>duplicate rule &apos;{name}&apos;</source>
        <translation>复制规则 &apos;{name}&apos;</translation>
    </message>
    <message>
        <source>delete rule &apos;{name}&apos;</source>
        <translation>删除规则 &apos;{name}&apos;</translation>
    </message>
    <message>
        <source>edit rule &apos;{name}&apos;</source>
        <translation>编辑规则 &apos;{name}&apos;</translation>
    </message>
    <message>
        <source>enable rule &apos;{name}&apos;</source>
        <translation>启用规则 &apos;{name}&apos;</translation>
    </message>
    <message>
        <source>disable rule &apos;{name}&apos;</source>
        <translation>停用规则 &apos;{name}&apos;</translation>
    </message>
    <message>
        <source>move rule &apos;{name}&apos;</source>
        <translation>移动规则 &apos;{name}&apos;</translation>
    </message>
</context>
<context>
    <name>RuleEditor</name>
    <message>
        <source>enabled</source>
        <translation>启用</translation>
    </message>
    <message>
        <source>model names, in order, comma-separated</source>
        <translation>模型名称，按顺序，用逗号分隔</translation>
    </message>
    <message>
        <source>any of these tags, e.g. code, fast</source>
        <translation>任一标签，例如 code, fast</translation>
    </message>
    <message>
        <source>substrings of the user text, any case</source>
        <translation>用户文本中的子串，不区分大小写</translation>
    </message>
    <message>
        <source>model names clients ask for, e.g. gpt-4o</source>
        <translation>客户端请求的模型名，例如 gpt-4o</translation>
    </message>
    <message>
        <source>no limit</source>
        <translation>不限</translation>
    </message>
    <message>
        <source>Rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>目标</translation>
    </message>
    <message>
        <source>Fallbacks</source>
        <translation>备选模型</translation>
    </message>
    <message>
        <source>Conditions (all must hold; a list holds when any element does)</source>
        <translation>条件（须全部满足；列表中任一项满足即可）</translation>
    </message>
    <message>
        <source>Tags</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Keywords</source>
        <translation>关键词</translation>
    </message>
    <message>
        <source>Min prompt chars</source>
        <translation>提示词最少字符数</translation>
    </message>
    <message>
        <source>Max prompt chars</source>
        <translation>提示词最多字符数</translation>
    </message>
    <message>
        <source>Model asked for</source>
        <translation>请求的模型</translation>
    </message>
    <message>
        <source>Path</source>
        <translation>路径</translation>
    </message>
    <message>
        <source>more models sharing the requests, e.g. a, b (weighted: b=3; spillover: b=4 in flight)</source>
        <translation>分担请求的更多模型，例如 a, b（weighted：b=3；spillover：b=4 个进行中）</translation>
    </message>
    <message>
        <source>Targets</source>
        <translation>目标</translation>
    </message>
    <message>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
</context>
<context>
    <name>RulesModel</name>
    <message>
        <source>anything</source>
        <translation>任意请求</translation>
    </message>
    <message>
        <source>(then {models})</source>
        <translation>（然后 {models}）</translation>
    </message>
    <message>
        <source>(disabled)</source>
        <translation>（已停用）</translation>
    </message>
</context>
<context>
    <name>SamplingControls</name>
    <message>
        <source>model default</source>
        <translation>模型默认</translation>
    </message>
    <message>
        <source>makes repeating a recent token less likely; 1.00 = off</source>
        <translation>降低重复最近 token 的可能性；1.00 = 关闭</translation>
    </message>
    <message>
        <source>Max tokens</source>
        <translation>最大 token 数</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Repeat penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <source>Stop loops</source>
        <translation>停止循环</translation>
    </message>
    <message>
        <source>stop a reply that keeps repeating the same text</source>
        <translation>停止一直重复相同内容的回复</translation>
    </message>
</context>
<context>
    <name>ScreenshotDirector</name>
    <message>
        <source>screenshot mode: preparing panels…</source>
        <translation>截图模式：正在准备各面板…</translation>
    </message>
    <message>
        <source>saved {n} pictures in {folder}</source>
        <translation>已在 {folder} 保存 {n} 张图片</translation>
    </message>
</context>
<context>
    <name>SemanticFields</name>
    <message>
        <source>Semantic (the user text is close to example prompts)</source>
        <translation>语义（用户文本与示例提示相近）</translation>
    </message>
    <message>
        <source>example prompts for this route, one per line</source>
        <translation>此路由的示例提示，每行一个</translation>
    </message>
    <message>
        <source>look-alike prompts that belong elsewhere, one per line</source>
        <translation>看起来相似但属于别处的提示，每行一个</translation>
    </message>
    <message>
        <source>learned (a classifier over every semantic rule picks the route)</source>
        <translation>learned（由覆盖所有语义规则的分类器选择路由）</translation>
    </message>
    <message>
        <source>nearest (the nearest examples decide)</source>
        <translation>nearest（由最近的示例决定）</translation>
    </message>
    <message>
        <source>learned: the classifier&apos;s probability for this route needed</source>
        <translation>learned：此路由所需的分类器概率</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>示例</translation>
    </message>
    <message>
        <source>Negatives</source>
        <translation>反例</translation>
    </message>
    <message>
        <source>Threshold</source>
        <translation>阈值</translation>
    </message>
    <message>
        <source>Scoring</source>
        <translation>评分方式</translation>
    </message>
    <message>
        <source>Minimum probability</source>
        <translation>最低概率</translation>
    </message>
    <message>
        <source>the score is the mean similarity of this many nearest examples</source>
        <translation>得分是这么多个最近示例的平均相似度</translation>
    </message>
    <message>
        <source>Nearest examples averaged</source>
        <translation>平均的最近示例数</translation>
    </message>
    <message>
        <source>auto (calibrated on the background corpus)</source>
        <translation>自动（按背景语料校准）</translation>
    </message>
</context>
<context>
    <name>SemanticScoreView</name>
    <message>
        <source>type a prompt to see its score</source>
        <translation>输入提示以查看其得分</translation>
    </message>
    <message>
        <source>Select a rule with semantic examples.</source>
        <translation>请选择一条带有语义示例的规则。</translation>
    </message>
    <message>
        <source>cosine similarity to the nearest example</source>
        <translation>与最近示例的余弦相似度</translation>
    </message>
    <message>
        <source>prompts</source>
        <translation>提示数</translation>
    </message>
    <message>
        <source>examples (left out one at a time)</source>
        <translation>示例（逐一留出）</translation>
    </message>
    <message>
        <source>negatives</source>
        <translation>反例</translation>
    </message>
    <message>
        <source>recent requests</source>
        <translation>最近的请求</translation>
    </message>
    <message>
        <source>leave-one-out (every example passes)</source>
        <translation>留一法（每个示例都通过）</translation>
    </message>
    <message>
        <source>best F1 against the negatives</source>
        <translation>相对反例的最佳 F1</translation>
    </message>
    <message>
        <source>the precision I pick</source>
        <translation>我选择的精确率</translation>
    </message>
    <message>
        <source>Use this threshold</source>
        <translation>使用此阈值</translation>
    </message>
    <message>
        <source>Use this minimum probability</source>
        <translation>使用此最低概率</translation>
    </message>
    <message>
        <source>Suggest</source>
        <translation>建议</translation>
    </message>
    <message>
        <source>precision</source>
        <translation>精确率</translation>
    </message>
    <message>
        <source>This rule has no semantic examples.</source>
        <translation>此规则没有语义示例。</translation>
    </message>
    <message>
        <source>holds</source>
        <translation>成立</translation>
    </message>
    <message>
        <source>does not hold</source>
        <translation>不成立</translation>
    </message>
    <message>
        <source>score {score:.3f} (threshold {threshold:.3f}): {verdict}; nearest example: “{nearest}”</source>
        <translation>得分 {score:.3f}（阈值 {threshold:.3f}）：{verdict}；最近的示例：“{nearest}”</translation>
    </message>
    <message>
        <source>no route</source>
        <translation>无路由</translation>
    </message>
    <message>
        <source>; probability {p:.2f} (needs {need:.2f}), the classifier picks {picked}</source>
        <translation>；概率 {p:.2f}（需要 {need:.2f}），分类器选择 {picked}</translation>
    </message>
    <message>
        <source>Type a prompt to see its score.</source>
        <translation>输入提示以查看其得分。</translation>
    </message>
    <message>
        <source>scoring failed: {error}</source>
        <translation>评分失败：{error}</translation>
    </message>
    <message>
        <source>No suggestion: add at least two examples.</source>
        <translation>无建议：请至少添加两个示例。</translation>
    </message>
    <message>
        <source>threshold {t:.3f}: recall {r:.0%} of the examples</source>
        <translation>阈值 {t:.3f}：召回 {r:.0%} 的示例</translation>
    </message>
    <message>
        <source>precision {p:.0%} against the negatives</source>
        <translation>相对反例的精确率 {p:.0%}</translation>
    </message>
    <message>
        <source>{share:.0%} of recent requests would pass</source>
        <translation>{share:.0%} 的最近请求会通过</translation>
    </message>
    <message>
        <source>within my false-positive target</source>
        <translation>不超过我设定的误报目标</translation>
    </message>
    <message>
        <source>the share of negatives and background text a suggestion may let through</source>
        <translation>建议值最多允许通过的反例和背景文本比例</translation>
    </message>
    <message>
        <source>false positives at most</source>
        <translation>误报率上限</translation>
    </message>
    <message>
        <source>threshold {t:.3f} keeps false positives within {target:.0%}: {bg:.1%} of the background corpus passes</source>
        <translation>阈值 {t:.3f} 将误报控制在 {target:.0%} 以内：背景语料有 {bg:.1%} 通过</translation>
    </message>
    <message>
        <source>{neg:.0%} of the negatives</source>
        <translation>反例有 {neg:.0%} 通过</translation>
    </message>
    <message>
        <source>recall {r:.0%} of the examples</source>
        <translation>示例召回率 {r:.0%}</translation>
    </message>
    <message>
        <source>too few examples to promise it (8 or more needed)</source>
        <translation>示例太少，无法保证（至少需要 8 个）</translation>
    </message>
    <message>
        <source>too few negatives to promise it ({n} or more needed): the estimate rests on the background corpus</source>
        <translation>反例太少，无法保证（至少需要 {n} 个）：估计仅依据背景语料</translation>
    </message>
    <message>
        <source>minimum probability {p:.2f} (cross-validated over {n} rules&apos; examples, false positives within {target:.0%})</source>
        <translation>最低概率 {p:.2f}（基于 {n} 条规则的示例交叉验证，误报不超过 {target:.0%}）</translation>
    </message>
    <message>
        <source>Closest recent requests this rule did not take:</source>
        <translation>此规则未接收的最接近的近期请求：</translation>
    </message>
    <message>
        <source>“{text}”: {reason}</source>
        <translation>“{text}”：{reason}</translation>
    </message>
    <message>
        <source>Example “{mine}” overlaps rule {rule}&apos;s “{theirs}” ({sim:.2f})</source>
        <translation>示例“{mine}”与规则 {rule} 的“{theirs}”重叠（{sim:.2f}）</translation>
    </message>
</context>
<context>
    <name>SweepView</name>
    <message>
        <source>Clients</source>
        <translation>客户端</translation>
    </message>
    <message>
        <source>Prompt chars</source>
        <translation>提示词字符</translation>
    </message>
    <message>
        <source>TTFT p50</source>
        <translation>TTFT p50</translation>
    </message>
    <message>
        <source>TTFT p95</source>
        <translation>TTFT p95</translation>
    </message>
    <message>
        <source>Peak RAM</source>
        <translation>内存峰值</translation>
    </message>
    <message>
        <source>Swap moved</source>
        <translation>交换量</translation>
    </message>
    <message>
        <source>KV peak</source>
        <translation>KV 峰值</translation>
    </message>
    <message>
        <source>Errors</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Stopped by</source>
        <translation>停止原因</translation>
    </message>
    <message>
        <source>memory guard</source>
        <translation>内存守护</translation>
    </message>
    <message>
        <source>swap</source>
        <translation>交换</translation>
    </message>
    <message>
        <source>errors</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Throughput against clients</source>
        <translation>吞吐量与客户端数</translation>
    </message>
    <message>
        <source>TTFT p95 against clients</source>
        <translation>TTFT p95 与客户端数</translation>
    </message>
    <message>
        <source>Peak RAM used against clients</source>
        <translation>内存峰值与客户端数</translation>
    </message>
    <message>
        <source>clients</source>
        <translation>客户端</translation>
    </message>
    <message>
        <source>No recommendation: {reason}</source>
        <translation>无推荐：{reason}</translation>
    </message>
    <message>
        <source>&lt;b&gt;Recommended: {n} clients&lt;/b&gt; at {chars} prompt characters — {tps:.1f} tokens/s, TTFT p95 {ttft:.0f} ms (target {target:g} ms), within the memory limits</source>
        <translation>&lt;b&gt;推荐：{n} 个客户端&lt;/b&gt;，提示词 {chars} 字符 — {tps:.1f} tokens/秒，TTFT p95 {ttft:.0f} ms（目标 {target:g} ms），在内存限制之内</translation>
    </message>
</context>
<context>
    <name>Tray</name>
    <message>
        <source>Laya Desktop is still serving</source>
        <translation>Laya Desktop 仍在服务</translation>
    </message>
    <message>
        <source>The engine keeps running in the tray. Quit from the tray&apos;s menu to stop it.</source>
        <translation>引擎在托盘中继续运行。从托盘菜单中退出即可停止它。</translation>
    </message>
</context>
<context>
    <name>TrayMenu</name>
    <message>
        <source>up</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>down</source>
        <translation>未运行</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>启动中</translation>
    </message>
    <message>
        <source>Laya Desktop — engine {state}</source>
        <translation>Laya Desktop — 引擎{state}</translation>
    </message>
    <message>
        <source>loaded: {names}</source>
        <translation>已加载：{names}</translation>
    </message>
    <message>
        <source>no model loaded</source>
        <translation>没有已加载的模型</translation>
    </message>
    <message>
        <source>Open Laya Desktop</source>
        <translation>打开 Laya Desktop</translation>
    </message>
    <message>
        <source>no models</source>
        <translation>没有模型</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>Load {model}</source>
        <translation>加载 {model}</translation>
    </message>
    <message>
        <source>Unload {model}</source>
        <translation>卸载 {model}</translation>
    </message>
</context>
<context>
    <name>TranscriptView</name>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>Tool call: {name}</source>
        <translation>工具调用：{name}</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
</context>
<context>
    <name>WhatIfView</name>
    <message>
        <source>Edit the rules, then press “What if…” to replay recent requests against them before applying.</source>
        <translation>先编辑规则，再按“假如…”在应用之前用它们重放最近的请求。</translation>
    </message>
    <message>
        <source>Rule or model</source>
        <translation>规则或模型</translation>
    </message>
    <message>
        <source>Before</source>
        <translation>之前</translation>
    </message>
    <message>
        <source>After</source>
        <translation>之后</translation>
    </message>
    <message>
        <source>Change</source>
        <translation>变化</translation>
    </message>
    <message>
        <source>Request</source>
        <translation>请求</translation>
    </message>
    <message>
        <source>Requests that would move</source>
        <translation>会改变路由的请求</translation>
    </message>
    <message>
        <source>replaying recent requests…</source>
        <translation>正在重放最近的请求…</translation>
    </message>
    <message>
        <source>what-if failed:</source>
        <translation>假如分析失败：</translation>
    </message>
    <message>
        <source>No requests logged yet: nothing to replay.</source>
        <translation>尚未记录任何请求：没有可重放的内容。</translation>
    </message>
    <message>
        <source>{changed} of {replayed} recent requests would change route.</source>
        <translation>最近 {replayed} 个请求中有 {changed} 个会改变路由。</translation>
    </message>
    <message>
        <source>rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>model</source>
        <translation>模型</translation>
    </message>
</context>
<context>
    <name>Downloads</name>
    <message>
        <source>the models folder is not known yet: the engine has not answered</source>
        <translation>模型文件夹尚未确定：引擎还没有应答</translation>
    </message>
</context>
<context>
    <name>DownloadsView</name>
    <message>
        <source>New rule &apos;agents&apos; (requests tagged agents)</source>
        <translation>新规则 &apos;agents&apos;（带 agents 标签的请求）</translation>
    </message>
    <message>
        <source>New rule &apos;default&apos; (every other request)</source>
        <translation>新规则 &apos;default&apos;（其余所有请求）</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>downloading</source>
        <translation>下载中</translation>
    </message>
    <message>
        <source>verifying</source>
        <translation>校验中</translation>
    </message>
    <message>
        <source>done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>{done} of {total}</source>
        <translation>{done} / {total}</translation>
    </message>
    <message>
        <source>{speed}/s</source>
        <translation>{speed}/秒</translation>
    </message>
    <message>
        <source>{eta} left</source>
        <translation>剩余 {eta}</translation>
    </message>
    <message>
        <source>failed: {error}</source>
        <translation>失败：{error}</translation>
    </message>
    <message>
        <source>Downloads</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Quantization</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <source>Time left</source>
        <translation>剩余时间</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下载</translation>
    </message>
    <message>
        <source>Use for rule…</source>
        <translation>用于规则…</translation>
    </message>
    <message>
        <source>Resume downloads</source>
        <translation>继续下载</translation>
    </message>
    <message>
        <source>added to the models as &apos;{name}&apos;</source>
        <translation>已作为 &apos;{name}&apos; 添加到模型</translation>
    </message>
    <message>
        <source>&apos;{name}&apos; is in the models now; &quot;Use for rule…&quot; puts it behind a rule.</source>
        <translation>&apos;{name}&apos; 现已在模型中；“用于规则…”可将其放到某条规则之后。</translation>
    </message>
    <message>
        <source>Downloaded to {path}, but the engine refused the new model: {reason}</source>
        <translation>已下载到 {path}，但引擎拒绝了新模型：{reason}</translation>
    </message>
    <message>
        <source>Rule &apos;{rule}&apos; now sends its requests to &apos;{model}&apos;.</source>
        <translation>规则 &apos;{rule}&apos; 现在将其请求发送到 &apos;{model}&apos;。</translation>
    </message>
    <message>
        <source>Rule &apos;{rule}&apos; was not changed: {reason}</source>
        <translation>规则 &apos;{rule}&apos; 未更改：{reason}</translation>
    </message>
    <message>
        <source>Not finished last time: {names}</source>
        <translation>上次未完成：{names}</translation>
    </message>
    <message>
        <source>Downloads are off: {reason}</source>
        <translation>下载不可用：{reason}</translation>
    </message>
</context>
<context>
    <name>GetModelsDialog</name>
    <message>
        <source>Get models</source>
        <translation>获取模型</translation>
    </message>
    <message>
        <source>Search the model hub, e.g. qwen coder</source>
        <translation>搜索模型中心，例如 qwen coder</translation>
    </message>
    <message>
        <source>Search</source>
        <translation>搜索</translation>
    </message>
    <message>
        <source>MLX models (mlx-community)</source>
        <translation>MLX 模型（mlx-community）</translation>
    </message>
    <message>
        <source>Repository</source>
        <translation>仓库</translation>
    </message>
    <message>
        <source>Downloads</source>
        <translation>下载量</translation>
    </message>
    <message>
        <source>Licence</source>
        <translation>许可证</translation>
    </message>
    <message>
        <source>Gated</source>
        <translation>受限</translation>
    </message>
    <message>
        <source>Choose a repository to see its files.</source>
        <translation>选择一个仓库以查看其文件。</translation>
    </message>
    <message>
        <source>Tokens per sequence (n_ctx) the estimate is made for</source>
        <translation>估算所用的每序列词元数（n_ctx）</translation>
    </message>
    <message>
        <source>Sequences served at once (parallel) the estimate is made for</source>
        <translation>估算所用的同时服务序列数（parallel）</translation>
    </message>
    <message>
        <source>Context (n_ctx)</source>
        <translation>上下文（n_ctx）</translation>
    </message>
    <message>
        <source>Parallel</source>
        <translation>并行</translation>
    </message>
    <message>
        <source>Quantization</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Memory needed</source>
        <translation>所需内存</translation>
    </message>
    <message>
        <source>On this machine</source>
        <translation>在本机上</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下载</translation>
    </message>
    <message>
        <source>Use for rule…</source>
        <translation>用于规则…</translation>
    </message>
    <message>
        <source>Add GGUF…</source>
        <translation>添加 GGUF…</translation>
    </message>
    <message>
        <source>Add a GGUF file that is already on this machine</source>
        <translation>添加本机上已有的 GGUF 文件</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>The model hub cannot be reached, so nothing can be searched or downloaded now. A GGUF file already on this machine can still be added: &quot;Add GGUF…&quot; below.</source>
        <translation>无法连接到模型中心，因此现在无法搜索或下载。仍可添加本机上已有的 GGUF 文件：点击下方的“添加 GGUF…”。</translation>
    </message>
    <message>
        <source>This repository is gated.</source>
        <translation>此仓库受限。</translation>
    </message>
    <message>
        <source>{doing} failed: {error}</source>
        <translation>{doing}失败：{error}</translation>
    </message>
    <message>
        <source>Type what to search for, e.g. qwen coder.</source>
        <translation>请输入要搜索的内容，例如 qwen coder。</translation>
    </message>
    <message>
        <source>Searching for &apos;{text}&apos;…</source>
        <translation>正在搜索 &apos;{text}&apos;…</translation>
    </message>
    <message>
        <source>Searching</source>
        <translation>搜索</translation>
    </message>
    <message>
        <source>gated</source>
        <translation>受限</translation>
    </message>
    <message>
        <source>{count} repositories found.</source>
        <translation>找到 {count} 个仓库。</translation>
    </message>
    <message>
        <source>Nothing found; try fewer or other words.</source>
        <translation>未找到结果；请尝试更少或其他的关键词。</translation>
    </message>
    <message>
        <source>Reading the files of {repo}…</source>
        <translation>正在读取 {repo} 的文件…</translation>
    </message>
    <message>
        <source>{repo}: {error}</source>
        <translation>{repo}：{error}</translation>
    </message>
    <message>
        <source>Reading the repository</source>
        <translation>读取仓库</translation>
    </message>
    <message>
        <source>licence: {licence}</source>
        <translation>许可证：{licence}</translation>
    </message>
    <message>
        <source>gated: you need to accept its conditions on the hub</source>
        <translation>受限：您需要在模型中心接受其条款</translation>
    </message>
    <message>
        <source>not gated</source>
        <translation>不受限</translation>
    </message>
    <message>
        <source>This repository is gated and no Hugging Face token is set (HF_TOKEN or `hf auth login`), so its files cannot be downloaded.</source>
        <translation>此仓库受限，且未设置 Hugging Face 令牌（HF_TOKEN 或 `hf auth login`），因此无法下载其文件。</translation>
    </message>
    <message>
        <source>{repo} has no GGUF file or MLX build that Laya can serve.</source>
        <translation>{repo} 没有 Laya 可以提供服务的 GGUF 文件或 MLX 构建。</translation>
    </message>
    <message>
        <source>{quant} ({parts} parts)</source>
        <translation>{quant}（{parts} 个分片）</translation>
    </message>
    <message>
        <source>no estimate</source>
        <translation>无估算</translation>
    </message>
    <message>
        <source>fits</source>
        <translation>可容纳</translation>
    </message>
    <message>
        <source>tight</source>
        <translation>紧张</translation>
    </message>
    <message>
        <source>does not fit</source>
        <translation>容纳不下</translation>
    </message>
    <message>
        <source>VRAM</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>{needed} of {available} {device}</source>
        <translation>{needed} / {available} {device}</translation>
    </message>
    <message>
        <source>Choose a quantization first.</source>
        <translation>请先选择一种量化。</translation>
    </message>
    <message>
        <source>Starting the download of {repo} {quant}…</source>
        <translation>正在开始下载 {repo} {quant}…</translation>
    </message>
    <message>
        <source>The download did not start: {reason}</source>
        <translation>下载未能开始：{reason}</translation>
    </message>
    <message>
        <source>Downloaded to {path}; adding it to the models…</source>
        <translation>已下载到 {path}；正在添加到模型…</translation>
    </message>
    <message>
        <source>Added to the models as &apos;{name}&apos;. &quot;Use for rule…&quot; puts it behind a rule, e.g. default.</source>
        <translation>已作为 &apos;{name}&apos; 添加到模型。“用于规则…”可将其放到某条规则之后，例如 default。</translation>
    </message>
    <message>
        <source>Downloaded, but the engine refused the new model: {reason}</source>
        <translation>已下载，但引擎拒绝了新模型：{reason}</translation>
    </message>
    <message>
        <source>Rule &apos;{rule}&apos; now sends its requests to &apos;{model}&apos;.</source>
        <translation>规则 &apos;{rule}&apos; 现在将其请求发送到 &apos;{model}&apos;。</translation>
    </message>
    <message>
        <source>Rule &apos;{rule}&apos; was not changed: {reason}</source>
        <translation>规则 &apos;{rule}&apos; 未更改：{reason}</translation>
    </message>
</context>
</TS>
