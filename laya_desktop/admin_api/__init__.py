"""The engine's admin API as data: each call described (method, quoted path, body, timeout) and
its answer parsed into typed objects, with no HTTP library and no Qt. The GUI sends these calls
with QtNetwork, `laya ps/load/unload` and the load tester with httpx."""
