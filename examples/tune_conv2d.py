"""TE's ``opt_conv_cuda`` convolution (`examples.gpu_conv2d`) as a template: the register tile,
the threads, the virtual threads and the input-channel step are knobs (96 points), as in the
tuning of TOPI's conv2d templates with AutoTVM.

    python -m examples.tune_conv2d 256 256 512 14    # batch, in, out channels, image size
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_conv2d


@sl.tune.template
def conv2d(cfg, batch, in_channel, out_channel, size):
    a, w, b = gpu_conv2d.conv2d(batch, in_channel, out_channel, size)
    tile = cfg.choice("tile", [1, 2, 4, 8])
    num_thread = cfg.choice("num_thread", [4, 8, 16])
    vthread = cfg.choice("vthread", [1, 2])
    step = cfg.choice("step", [4, 8, 16, 32])
    if tile * vthread > 8:
        raise sl.tune.Invalid(f"{tile * vthread}x{tile * vthread} accumulators per thread")
    return gpu_conv2d.schedule(a, w, b, tile, num_thread, vthread, step), [a, w, b]


def main(batch=256, in_channel=256, out_channel=512, size=14) -> None:
    log = sl.tune.run(conv2d(batch, in_channel, out_channel, size), target="cuda")
    print(log)
    print(log.best().text)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
