#!/usr/bin/python3
"""torchrun (torch.distributed.run) from Debian's python3-torch 1.13 with a
fix applied in this process only.

On Python 3.11, Std.from_str("0") (the default of --redirects and --tee)
returns None: it looks the value up by iterating over Std, an IntFlag, and
since Python 3.11 iterating over a Flag yields only its single-bit members,
so NONE (0) and ALL (3) are never found; torchrun then dies at worker start
with "'NoneType' object has no attribute 'get'". This wrapper replaces
to_std's loop with Std(int(v)) and runs torchrun's main unchanged.
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api

Std = api.Std


def _from_str(cls, vm):
    if re.match(api._VALUE_REGEX, vm):
        return cls(int(vm))
    if re.match(api._MAPPING_REGEX, vm):
        d = {}
        for m in vm.split(","):
            i, v = m.split(":")
            d[int(i)] = cls(int(v))
        return d
    raise ValueError(f"{vm} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    from torch.distributed.run import main
    sys.argv[0] = "torchrun"
    sys.exit(main())
