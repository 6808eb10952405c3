"""A verdict.yml context written before the one context model, read as the context descriptor it stands for."""

from typing import Any


def legacy_context(old: dict[str, Any]) -> dict[str, Any]:
    """A verdict.yml context written before the one context model (a flat shape: model, gpu, host, node, engine,
    engine_version, bench_client, ...), as the context descriptor it stands for. Nothing is invented: what the old
    shape did not record (the config hash, the quantization, the dtype) stays unknown."""
    serve, gpu, workload, regime = old["serve"], old.get("gpu"), old["workload"], old["regime"]
    engine, version, client = old["engine"], old.get("engine_version"), old["bench_client"]
    get = serve.get if isinstance(serve, dict) else lambda k, d=None: getattr(serve, k, d)
    node = {"hostname": old.get("host"), "machine_id": old.get("node"), "gpu_uuids": old.get("gpu_uuids") or []}
    hardware = {"gpu_name": gpu["name"], "gpu_memory_gib": gpu["memory_gib"], "gpu_count": gpu["count"]} if gpu else {}
    return {
        "provenance": "simulated" if old.get("simulated") else "measured",
        "model": {"name": old["model"]},
        "hardware": hardware,
        "kv_cache_dtype": get("kv_cache_dtype") or "auto",
        "parallelism": {
            "tp": get("tensor_parallel_size", 1),
            "dp": get("data_parallel_size", 1),
            "pp": get("pipeline_parallel_size", 1),
        },
        "serve": serve,
        "workload": {k: workload[k] for k in ("dataset", "input_len", "output_len") if k in workload},
        "regime": {
            "cache": regime["cache"],
            "graphs": regime["graphs"],
            "prefix_caching": get("enable_prefix_caching"),
        },
        "engine": {"name": engine, "version": version},
        "bench": {
            "client": client,
            "backend": old.get("bench_backend"),
            "version": version if client == engine else None,
        },
        "trials": old.get("trials", 1),
        "warmup_requests": old.get("warmup_requests"),
        "node": node if old.get("host") or old.get("node") else None,
    }


__all__ = ["legacy_context"]
