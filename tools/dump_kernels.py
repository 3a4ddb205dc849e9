"""Write every rendered kernel source to a folder, one file per program, for reading.

    python tools/dump_kernels.py out/kernels
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402,F401  (importing renders every template)
from clgrad.runtime.kernels import ALL_PROGRAMS  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "kernels"
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
