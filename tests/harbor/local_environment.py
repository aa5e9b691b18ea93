"""A stand-in for a Harbor task container: a directory on this machine.

`LocalDirEnvironment` is a `harbor.environments.base.BaseEnvironment` whose
"container filesystem" is a temp directory (`root`). Harbor addresses the
container with absolute paths (`/installed-agent`, `/opt/harbor-acp-venv`,
`/logs/agent`, `/tests`, the workdir `/app`); every upload and download maps
them under `root`, and `exec` runs the command with `bash -c` on this machine
after rewriting those same path prefixes in the command text. Nothing is run as
another user (`user` is recorded, not switched to).

`start()` lays out what a task image would already hold before Harbor's ACP
agent installs itself: the runner's virtualenv (a wrapper around the Python
that runs this test, which has `agent-client-protocol`), a `uv` that refuses to
run, and package managers that only record what they were asked for. So the
agent's real install script runs and finds its tools in place, without root,
apt or the network.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import sys
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

# Container paths Harbor uses; a command's mention of one is moved under root.
_MAPPED = re.compile(
    r"(?<![\w.\-/$])"
    r"(/(?:installed-agent|opt/harbor-acp-[\w.\-]*|logs|tests|solution|app|runtime))"
    r"(?![\w.\-])"
)

WORKDIR = "/app"


class LocalDirEnvironment(BaseEnvironment):
    """A task environment in a local directory (see the module's doc)."""

    def __init__(self, *args, root: str, extra_path: list[str] | None = None, **kwargs):
        self.root = Path(root).resolve()
        self.extra_path = list(extra_path or [])
        self.exec_log: list[dict] = []
        super().__init__(*args, **kwargs)

    @staticmethod
    def type() -> str:
        return "local-dir"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities()

    def _validate_definition(self):
        # No image to build: start() lays the filesystem out.
        return None

    # ------------------------------------------------------------------ paths

    def host_path(self, container_path: str | os.PathLike) -> Path:
        """Where container path `container_path` lives on this machine."""
        text = str(container_path)
        if not text.startswith("/"):
            text = f"{WORKDIR}/{text}"
        return self.root / text.lstrip("/")

    def _rewrite(self, command: str) -> str:
        return _MAPPED.sub(lambda m: str(self.root) + m.group(1), command)

    # -------------------------------------------------------------- lifecycle

    async def start(self, force_build: bool) -> None:
        for rel in (
            "app",
            "logs/agent",
            "logs/verifier",
            "logs/artifacts",
            "installed-agent",
            "tests",
            "home/agent",
            "opt/harbor-acp-python",
            "opt/harbor-acp-venv/bin",
            "opt/harbor-acp-tools",
            "shims",
        ):
            (self.root / rel).mkdir(parents=True, exist_ok=True)
        venv_python = self.root / "opt/harbor-acp-venv/bin/python"
        _write_exe(venv_python, f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        _write_exe(
            self.root / "opt/harbor-acp-tools/uv",
            "#!/bin/sh\necho 'uv is not available in the local stand-in environment' >&2\nexit 1\n",
        )
        for manager in ("apt-get", "apk", "dnf", "yum"):
            _write_exe(
                self.root / "shims" / manager,
                f'#!/bin/sh\necho "{manager} $*" >> "{self.root}/shims/calls.log"\n',
            )

    async def stop(self, delete: bool):
        # The test driver removes the temp dir after checking what was left in it.
        return None

    # ---------------------------------------------------------------- exec

    def _base_env(self) -> dict[str, str]:
        path = [str(self.root / "shims"), *self.extra_path, "/usr/local/bin", "/usr/bin", "/bin"]
        home = self.root / "home/agent"
        return {
            "PATH": ":".join(path),
            "HOME": str(home),
            "TROUPE_HOME": str(home / ".troupe"),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            # A task's scripts can reach container paths through this (empty in a
            # real container).
            "HARBOR_LOCAL_ROOT": str(self.root),
        }

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        full_env = self._base_env()
        full_env.update(self._merge_env(env) or {})
        workdir = self.host_path(cwd or WORKDIR)
        rewritten = self._rewrite(command)
        self.exec_log.append(
            {"command": command, "user": self._resolve_user(user), "cwd": str(workdir)}
        )
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            rewritten,
            cwd=str(workdir),
            env=full_env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=timeout_sec)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            # The whole process group: the runner, the launcher and troupe.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()
            raise
        return ExecResult(
            stdout=stdout.decode("utf-8", "replace"),
            stderr=stderr.decode("utf-8", "replace"),
            return_code=process.returncode if process.returncode is not None else -1,
        )

    # ---------------------------------------------------------------- files

    async def upload_file(self, source_path: Path | str, target_path: str):
        target = self.host_path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str):
        shutil.copytree(source_dir, self.host_path(target_dir), dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str):
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.host_path(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str):
        shutil.copytree(self.host_path(source_dir), target_dir, dirs_exist_ok=True)


def _write_exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)
