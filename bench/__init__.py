"""LLMSim's benchmarks: each one a module run as `python -m bench.NAME` (or `python bench/NAME.py`), each with
`--smoke` to run its real code path for about a second (tests/test_bench.py). What each measures, how, and the
figures measured: bench/README.md.

Benches: `run` (overhead at speed 0, timing fidelity, the knee, memory), `stores` (the stores and workers),
`proxy_bench` (what `--backend proxy` adds), `stalls` (chaos and hostile input), `meter` (what metrics cost),
`text_bench` (the simulated text's cost), `mlx_bench` (the mlx backend against mlx_lm), `startup` (how soon a
server answers, what the pytest fixture and an unused plugin cost, idle memory; beside aimock).
Their parts: `common` (measuring and printing), `servers` (the servers they start: LLMSim's, the floors),
`bare` and `bare_forwarder` (the floors), and the loads: `load`, `sse_client`, `stream_load`, `lazy_streams`, `wrk`.
"""
