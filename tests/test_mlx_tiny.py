"""`llmsim mlx tiny DIR` (issue 46, item 13): the random model the MLX tests use, built by a documented command, so
a newcomer with no Apple hardware and no downloaded model can try --backend mlx; a real server serves it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openai

from llmsim.testing import ServerProcess
from optional import needs

pytestmark = needs("mlx_lm", install="the mlx extra (mlx[cpu] on Linux)")  # looked up: its import is ~1 s


def tiny(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmsim", "mlx", "tiny", *args], capture_output=True, text=True,
                          timeout=300)


def test_the_tiny_model_command_builds_a_model_a_server_serves(tmp_path: Path) -> None:
    folder = tmp_path / "tiny-model"
    built = tiny(str(folder))
    assert built.returncode == 0, built.stderr
    assert built.stdout == f"built a tiny random model in {folder}: llmsim serve --backend mlx --model tiny={folder}\n"
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    with ServerProcess("--backend", "mlx", "--model", f"tiny={folder}", "--speed", "0") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        assert [model.id for model in client.models.list()] == ["tiny"]
        response = client.responses.create(model="tiny", input="Hello", max_output_tokens=16)
        assert response.status in ("completed", "incomplete") and response.usage is not None
        assert response.usage.input_tokens > 0 and 0 < response.usage.output_tokens <= 16
    again = tiny(str(folder))  # never over a folder that holds something
    assert again.returncode == 2 and again.stderr == f"llmsim: {folder}: exists and is not an empty directory\n"
