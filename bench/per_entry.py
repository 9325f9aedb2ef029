#!/usr/bin/env python3
# Prints `kjit stats --json` (read from the file named first) per entry: used by
# bench/headers_once.sh and bench/entry_size.sh.
import json
import sys

d = json.load(open(sys.argv[1]))
n, b = d["entries"], d["bytes"]
print(f"entries {n}; per entry: cubin {b['cubin'] / n:.0f} B, PTX {b['ptx'] / n:.0f} B, "
      f"tracked source and headers {b['source'] / n / 1024:.1f} KiB")
print(f"entry record per entry {b['records'] / n / 1024:.1f} KiB")
print(f"store (data.mdb allocated) per entry {b['store_file'] / n / 1024:.1f} KiB")
print(f"mirror (programs/ allocated) per entry {b['mirror'] / n / 1024:.1f} KiB")
