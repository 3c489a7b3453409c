"""One cold start, in the fresh process `assist bench cold-start` starts (its job on stdin).

Run as a script, not a module of its package, and importing only the standard library: whatever this process
loads before `t0` a real cold start would pay for, so it must load nothing of the runtime or the tooling.
The job's `blocked` names the top-level modules installed here that the function's image does not have: they are
refused, as that image's interpreter would refuse them, so the process loads what the image would and no more
(an optional dependency is skipped, a missing one fails here as it would there).
"""

import importlib
import importlib.abc
import json
import sys
import time


class NotInImage(importlib.abc.MetaPathFinder):
    def __init__(self, function: str, blocked: list[str]) -> None:
        self.function, self.blocked = function, frozenset(blocked)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {fullname!r} (not in the {self.function} image)", name=fullname)
        return None


def main() -> None:
    job = json.loads(sys.stdin.read())
    sys.meta_path.insert(0, NotInImage(job["function"], job.get("blocked", [])))
    t0 = time.perf_counter()
    module = importlib.import_module(f"functions.{job['function']}.app")
    t1 = time.perf_counter()
    result = module.handler(job["event"], None)
    t2 = time.perf_counter()
    out = {"import_s": t1 - t0, "first_call_s": t2 - t1, "keys": sorted(result), "status": result.get("statusCode")}
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
