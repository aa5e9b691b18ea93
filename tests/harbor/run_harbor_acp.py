#!/usr/bin/env python3
"""Harbor's own ACP agent drives Troupe, end to end, with nothing but 127.0.0.1.

Runs a real `harbor.trial` Trial (harbor==0.26.0): the task below, agent `acp`
with Troupe's registry entry (integrations/harbor/troupe.json, its `local`
distribution: `troupe --acp` on PATH), environment `LocalDirEnvironment` (a temp
directory standing in for the container, see local_environment.py), and Harbor's
verifier. The model is a loopback fake of the Gemini API on 127.0.0.1: Harbor
hands Troupe its key and base URL the way a job does, through the agent's `env`
(GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL), and picks the model with `model_name`.

Checks the trial result (no exception, reward 1, AgentContext tokens and ACP
metadata), the requests the fake model got (the model Harbor chose, the shell
call's output sent back), and the ATIF trajectory Harbor wrote (validated with
`harbor.models.trajectories.Trajectory`: Troupe's tool call, its output, the final
answer, the token totals). Exits 1 with the reasons on any failure.

Usage: run_harbor_acp.py --troupe PATH [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ENTRY = REPO / "integrations/harbor/troupe.json"
TEMPLATE = REPO / "integrations/harbor/troupe-binary.template.json"
sys.path.insert(0, str(HERE))

# Nothing but 127.0.0.1: LiteLLM (imported by Harbor) would fetch its model price
# list from GitHub, and Harbor's telemetry would report to PostHog.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["HARBOR_TELEMETRY"] = "off"

MODEL = "google/gemini-2.5-flash"
API_KEY = "loopback-test-key"
PROOF = "harbor-drove-troupe"
COMMAND = f"echo {PROOF} > proof.txt && cat proof.txt"
ANSWER = "proof.txt now holds the marker line."

INSTRUCTION = "Create proof.txt in the current directory holding the marker line, then say so."

TEST_SH = """#!/bin/bash
# Harbor's verifier: reward 1 when the agent left the marker in /app/proof.txt.
root="${HARBOR_LOCAL_ROOT:-}"
if grep -qx 'harbor-drove-troupe' "$root/app/proof.txt"; then
  echo 1 > "$root/logs/verifier/reward.txt"
else
  echo 0 > "$root/logs/verifier/reward.txt"
fi
"""

TASK_TOML = """schema_version = "1.4"

[metadata]
author_name = "troupe tests"

[verifier]
timeout_sec = 60.0

[agent]
timeout_sec = 120.0

[environment]
build_timeout_sec = 60.0
"""


def usage(prompt: int, output: int) -> dict:
    return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}


# What the fake model answers, one element per streamGenerateContent request.
SCRIPT = [
    [
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Writing the file."},
                            {
                                "functionCall": {
                                    "name": "run_shell_command",
                                    "args": {"command": COMMAND, "description": "Write the marker"},
                                }
                            },
                        ],
                    },
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": usage(120, 15),
        }
    ],
    [
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": ANSWER}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": usage(200, 9),
        }
    ],
]


class FakeGemini:
    """Gemini's streamGenerateContent on 127.0.0.1, answering SCRIPT in order."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.unexpected: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                return

            def do_GET(self):
                fake.unexpected.append(f"GET {self.path}")
                self.send_error(404)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.split("?", 1)[0]
                if not path.endswith(":streamGenerateContent"):
                    fake.unexpected.append(f"POST {self.path}")
                    self.send_error(404)
                    return
                index = len(fake.requests)
                fake.requests.append(
                    {
                        "path": path,
                        "key": self.headers.get("x-goog-api-key"),
                        "body": json.loads(body or b"{}"),
                    }
                )
                if index >= len(SCRIPT):
                    fake.unexpected.append(f"request {index + 1} past the script")
                    self.send_error(500, "script exhausted")
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for chunk in SCRIPT[index]:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "FakeGemini":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def that(self, ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)


def write_task(task_dir: Path) -> None:
    (task_dir / "tests").mkdir(parents=True)
    (task_dir / "environment").mkdir()
    (task_dir / "task.toml").write_text(TASK_TOML)
    (task_dir / "instruction.md").write_text(INSTRUCTION + "\n")
    # Read by Docker-based environments only; the local stand-in builds nothing.
    (task_dir / "environment/Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    test_sh = task_dir / "tests/test.sh"
    test_sh.write_text(TEST_SH)
    test_sh.chmod(0o755)


def validate_entries(checks: Checks) -> None:
    from harbor.agents.installed.acp import AcpRegistryEntry

    for path in (ENTRY, TEMPLATE):
        try:
            entry = AcpRegistryEntry.model_validate(json.loads(path.read_text()))
        except Exception as exc:  # any validation error is the finding
            checks.that(False, f"{path.name} is a valid AcpRegistryEntry ({exc})")
            continue
        checks.that(True, f"{path.name} is a valid AcpRegistryEntry")
        local = entry.distribution.local
        checks.that(
            local is not None and local.cmd == "troupe" and local.args == ["--acp"],
            f"{path.name}: local distribution runs `troupe --acp`",
        )


def validate_job_configs(checks: Checks) -> None:
    import yaml
    from harbor.agents.installed.acp import AcpRegistryEntry
    from harbor.models.job.config import JobConfig

    for path in sorted((REPO / "integrations/harbor").glob("job.*.yaml")):
        try:
            job = JobConfig.model_validate(yaml.safe_load(path.read_text()))
            kwargs = job.agents[0].kwargs
            if "registry_entry" in kwargs:
                AcpRegistryEntry.model_validate(kwargs["registry_entry"])
        except Exception as exc:
            checks.that(False, f"{path.name} is a valid JobConfig ({exc})")
            continue
        checks.that(job.agents[0].name == "acp", f"{path.name} is a valid JobConfig running agent acp")


async def run_trial(work: Path, troupe: Path, fake: FakeGemini):
    from harbor.models.trial.config import (
        AgentConfig,
        EnvironmentConfig,
        TaskConfig,
        TrialConfig,
    )
    from harbor.trial.trial import Trial

    task_dir = work / "task"
    write_task(task_dir)
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "troupe").symlink_to(troupe)
    config = TrialConfig(
        task=TaskConfig(path=task_dir),
        trial_name="troupe-acp",
        trials_dir=work / "trials",
        agent=AgentConfig(
            name="acp",
            model_name=MODEL,
            kwargs={"registry_entry_path": str(ENTRY), "distribution_preference": "local"},
            env={"GEMINI_API_KEY": API_KEY, "GOOGLE_GEMINI_BASE_URL": fake.url},
        ),
        environment=EnvironmentConfig(
            import_path="local_environment:LocalDirEnvironment",
            kwargs={"root": str(work / "container"), "extra_path": [str(bin_dir)]},
        ),
    )
    trial = await Trial.create(config)
    result = await trial.run()
    return trial, result


def check_result(checks: Checks, work: Path, trial, result, fake: FakeGemini) -> None:
    from harbor.models.trajectories import Trajectory

    checks.that(
        result.exception_info is None,
        "the trial raised nothing"
        + ("" if result.exception_info is None else f": {result.exception_info}"),
    )
    rewards = (result.verifier_result.rewards if result.verifier_result else None) or {}
    checks.that(rewards.get("reward") == 1, f"the verifier's reward is 1 (rewards: {rewards})")
    proof = work / "container/app/proof.txt"
    checks.that(
        proof.exists() and proof.read_text().strip() == PROOF,
        "Troupe's shell call wrote proof.txt in the workdir",
    )

    agent = result.agent_info
    checks.that(
        agent is not None and agent.name == "troupe" and agent.version == "0.1.0",
        f"agent_info names Troupe 0.1.0 ({agent})",
    )
    ctx = result.agent_result
    checks.that(ctx is not None, "the trial has an AgentContext")
    if ctx is None:
        return
    checks.that(ctx.n_input_tokens == 320, f"n_input_tokens is 120 + 200 ({ctx.n_input_tokens})")
    checks.that(ctx.n_output_tokens == 24, f"n_output_tokens is 15 + 9 ({ctx.n_output_tokens})")
    acp = (ctx.metadata or {}).get("acp") or {}
    checks.that(acp.get("error") is None, f"the ACP runner reported no error ({acp.get('error')})")
    checks.that(
        acp.get("resolved_session_model_id") == "gemini-2.5-flash",
        f"Harbor set the model through the session's config option ({acp.get('resolved_session_model_id')}, "
        f"{acp.get('set_model_error')})",
    )
    stop = (acp.get("prompt_response") or {}).get("stopReason")
    checks.that(stop == "end_turn", f"the prompt ended with end_turn ({stop})")
    info = acp.get("agent_info") or {}
    checks.that(info.get("name") == "troupe", f"initialize's agentInfo is troupe ({info})")

    # What the model was asked.
    checks.that(not fake.unexpected, f"the fake model got only streamGenerateContent ({fake.unexpected})")
    checks.that(len(fake.requests) == 2, f"two model requests ({len(fake.requests)})")
    checks.that(
        all(r["path"].endswith("/models/gemini-2.5-flash:streamGenerateContent") for r in fake.requests),
        f"every request went to the model Harbor chose ({[r['path'] for r in fake.requests]})",
    )
    checks.that(
        all(r["key"] == API_KEY for r in fake.requests),
        "every request carried the key from the agent's env",
    )
    if len(fake.requests) == 2:
        sent = json.dumps(fake.requests[1]["body"])
        checks.that(PROOF in sent, "the shell call's output went back to the model")

    # The trajectory Harbor wrote.
    path = trial.paths.agent_dir / "trajectory.json"
    checks.that(path.exists(), f"Harbor wrote {path.name}")
    if not path.exists():
        return
    try:
        trajectory = Trajectory.model_validate_json(path.read_text())
    except Exception as exc:
        checks.that(False, f"trajectory.json is a valid Trajectory ({exc})")
        return
    checks.that(True, "trajectory.json is a valid Trajectory")
    steps = trajectory.steps
    checks.that(
        bool(steps) and steps[0].source == "user" and INSTRUCTION in (steps[0].message or ""),
        "the first step is the instruction",
    )
    calls = [(s, c) for s in steps for c in (s.tool_calls or [])]
    shell = [(s, c) for s, c in calls if (c.arguments or {}).get("command") == COMMAND]
    checks.that(len(shell) == 1, f"one tool call ran the shell command ({[c.arguments for _, c in calls]})")
    if shell:
        step, call = shell[0]
        checks.that(call.function_name == "execute", f"the call is ACP kind execute ({call.function_name})")
        observed = " ".join(r.content or "" for r in (step.observation.results if step.observation else []))
        checks.that(PROOF in observed, f"the call's observation holds its output ({observed!r})")
    last = steps[-1] if steps else None
    checks.that(
        last is not None and last.source == "agent" and ANSWER in (last.message or ""),
        f"the last step is Troupe's final answer ({last.message if last else None!r})",
    )
    fm = trajectory.final_metrics
    checks.that(
        fm is not None and fm.total_prompt_tokens == 320 and fm.total_completion_tokens == 24,
        f"final_metrics count the turn's tokens ({fm})",
    )
    checks.that(
        trajectory.agent.name == "troupe" and trajectory.agent.model_name == "gemini-2.5-flash",
        f"the trajectory's agent is troupe on gemini-2.5-flash ({trajectory.agent.name}, {trajectory.agent.model_name})",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--troupe", required=True, type=Path, help="the troupe binary")
    parser.add_argument("--work", type=Path, help="the scratch dir (default: a new temp dir)")
    parser.add_argument("--keep", action="store_true", help="leave the scratch dir behind")
    args = parser.parse_args()
    if not args.troupe.is_file():
        print(f"FAIL no troupe binary at {args.troupe}")
        return 1

    work = Path(args.work or tempfile.mkdtemp(prefix="harbor-acp-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    checks = Checks()
    try:
        validate_entries(checks)
        validate_job_configs(checks)
        with FakeGemini() as fake:
            trial, result = asyncio.run(run_trial(work, args.troupe.resolve(), fake))
            check_result(checks, work, trial, result, fake)
        if checks.failures:
            agent_log = trial.paths.agent_dir / "acp.txt"
            for log in (agent_log, trial.paths.agent_dir / "acp-summary.json", trial.paths.exception_message_path):
                if log.exists():
                    print(f"--- {log}\n{log.read_text()[-4000:]}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"scratch dir kept: {work}")
    if checks.failures:
        print(f"\n{len(checks.failures)} check(s) failed:")
        for failure in checks.failures:
            print(f"  - {failure}")
        return 1
    print("\nHarbor's ACP agent drove Troupe: every check passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
