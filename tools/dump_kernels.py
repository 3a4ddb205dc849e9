"""Write every rendered kernel source to a folder, one file per program, for reading.

    python tools/dump_kernels.py out/kernels
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402,F401  (importing renders every template)
from clgrad.runtime.kernels import ALL_PROGRAMS  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="kernels", help="the folder to write (kernels)")
    out = ap.parse_args(argv).out
    os.makedirs(out, exist_ok=True)
    for p in ALL_PROGRAMS:
        path = os.path.join(out, f"{p.name}.cl")
        with open(path, "w") as f:
            f.write(f"/* {p.name}: {len(p.signatures)} kernels; build options add "
                    f"-DVEC=<n> -DVEC8=<n> -DREDUCE_BLOCKED=<0|1> {p.options} */\n")
            f.write(p.source)
    print(f"wrote {len(ALL_PROGRAMS)} programs to {out}/")


if __name__ == "__main__":
    main()
