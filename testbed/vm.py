"""The VM lane: run trial commands inside one long-lived virtme-ng VM on the pinned Debian kernel.

The lane's command line, ``python -m testbed.vm {exec [--cwd DIR] [--env K=V] -- CMD ...|stop|status}``,
and the same as functions (``vm_exec``, ``stop``, ``status``) for callers such as `tcprepro vm`.
The VM they all share is testbed/shared_vm.py; the first line above is the command's description.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from configuration import environment
from testbed.shared_vm import CHECKOUT, SharedVM
from testbed.vm_errors import VMError


def vm_exec(argv: list[str], cwd: Path, env: dict[str, str] | None = None, *,
            checkout: Path | None = None) -> int:
    """Run argv in this checkout's VM lane (booting it if needed); return its exit code."""
    return SharedVM(checkout).exec(argv, cwd, env)


def stop(checkout: Path | None = None, if_idle: bool = False) -> bool:
    return SharedVM(checkout).stop(if_idle=if_idle)


def status(checkout: Path | None = None) -> dict[str, Any] | None:
    return SharedVM(checkout).status()


def _forwarded_env(pairs: list[str]) -> dict[str, str]:
    """The host's TCPREPRO_* settings travel with the job; --env K=V adds more."""
    env = environment.forwarded()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--env {pair!r}: expected KEY=VALUE")
        env[key] = value
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m testbed.vm", description=__doc__.splitlines()[0])
    p.add_argument("--checkout", type=Path, default=CHECKOUT, help="repository root (default: %(default)s)")
    sub = p.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("exec", help="run a command in the VM")
    ex.add_argument("--cwd", type=Path, default=Path.cwd())
    ex.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    ex.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("stop", help="power the VM off")
    sub.add_parser("status", help="show the running VM")
    args = p.parse_args(argv)
    lane = SharedVM(args.checkout)
    try:
        if args.cmd == "exec":
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not command:
                p.error("exec: no command given")
            return lane.exec(command, args.cwd, _forwarded_env(args.env))
        if args.cmd == "stop":
            print("stopped" if lane.stop() else "no VM running")
            return 0
        st = lane.status()
        if st is None:
            print("no VM running")
            return 0
        print(f"kernel {st['release']}  accel {st['accel']}  pid {st['pid']}  uptime {st['uptime']} s"
              f"  boot {st['boot_seconds']} s  jobs {len(st['jobs'])}")
        for job in st["jobs"]:
            print(f"  {job['id']}: {shlex.join(job['argv'])}")
        return 0
    except VMError as exc:
        print(f"tcprepro.vm: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
