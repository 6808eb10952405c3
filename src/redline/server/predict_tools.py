"""The memory model's MCP tool: memory_predict, read-only, answered at once (no boot)."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from redline.models.memory import MemoryPrediction
from redline.offload import off_loop
from redline.ops.predict.predict import memory_predict
from redline.ops.requests_predict import MemoryPredictRequest
from redline.server.outside import model_folder
from redline.server.toolkit import READ_ONLY, state_of, tool


@tool(READ_ONLY, "Predict a boot's memory", MemoryPredictRequest)
async def _memory_predict(ctx: Context, request: MemoryPredictRequest) -> MemoryPrediction:
    """What a boot would print about its memory, before it runs: weights, activation, non-torch, CUDA graphs, the KV
    cache in GiB and in tokens (block-rounded), the requests of max_model_len it holds, and a band, labelled
    predicted: the same answer a ladder's, a campaign's and an A/B's plan give. The engine's model is calibrated on
    the real boots redline ships and those recorded in the workspace; a recorded boot of the same model anchors it.
    `model` is the model's folder on the server's host; where it is not, give its config.json as model_config_file."""
    state = state_of(ctx)
    if not request.model_config_file:  # a folder of the server's host: read only where its config allows
        await off_loop(model_folder, state.config, request.model)
    given = await off_loop(state.read_model_config, request.model_config_file) if request.model_config_file else None
    return await off_loop(memory_predict, state.config.workspace, request, given)
