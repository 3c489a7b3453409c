"""One cold start, in the fresh process `assist bench cold-start` starts (its job on stdin).

Run as a script, not a module of its package, and importing only the standard library: whatever this process
loads before `t0` a real cold start would pay for, so it must load nothing of the runtime or the tooling.
"""

import importlib
import json
import sys
import time


def main() -> None:
    job = json.loads(sys.stdin.read())
    t0 = time.perf_counter()
    module = importlib.import_module(f"functions.{job['function']}.app")
    t1 = time.perf_counter()
    result = module.handler(job["event"], None)
    t2 = time.perf_counter()
    sys.stdout.write(json.dumps({"import_s": t1 - t0, "first_call_s": t2 - t1, "keys": sorted(result)}) + "\n")


if __name__ == "__main__":
    main()
