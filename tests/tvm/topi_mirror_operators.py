"""The 29 operators that `topi_mirror` measures: for each, its inputs, TOPI's computes and
schedules by route, and numpy's result (TOPI's own ``tvm.topi.testing`` references where it
has one)."""

from __future__ import annotations

import numpy as np

from .topi_check import poisoned, random


class Operators:
    """The 29 operators: for each, the inputs, TOPI's computes and schedules by route ("x86":
    the compute and schedule TVM's x86 strategy picks; "generic": TOPI's generic schedule of
    the ``topi.nn`` compute) and numpy's result."""

    def __init__(self, tvm, topi) -> None:
        self.tvm, self.topi, self.te = tvm, topi, tvm.te
        self.x86, self.generic = topi.x86, topi.generic
        self.ref = topi.testing

    def _ph(self, shape, name, dtype="float32"):
        return self.te.placeholder(shape, name=name, dtype=dtype)

    def _elementwise(self, make, ref, shape=(3, 5, 7), low=-1.0):
        A = self._ph(shape, "A")
        a = random(shape, low=low)
        schedule = {"x86": self.x86.schedule_injective, "generic": self.generic.schedule_injective}
        return [A], [a], lambda route: (make(A), schedule[route]), ref(a)

    def exp(self):
        return self._elementwise(self.topi.exp, np.exp)

    def relu(self):
        return self._elementwise(self.topi.nn.relu, lambda a: np.maximum(a, 0))

    def add(self):
        A, B = self._ph((3, 5, 7), "A"), self._ph((5, 1), "B")
        a, b = random((3, 5, 7)), random((5, 1), seed=1)
        schedule = {"x86": self.x86.schedule_injective, "generic": self.generic.schedule_injective}
        return [A, B], [a, b], lambda route: (self.topi.add(A, B), schedule[route]), a + b

    def broadcast_to(self):
        return self._elementwise(
            lambda A: self.topi.broadcast_to(A, (3, 5, 7)),
            lambda a: np.broadcast_to(a, (3, 5, 7)),
            shape=(5, 1),
        )

    def _reduce(self, make, ref):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7))
        schedule = {"x86": self.x86.schedule_reduce, "generic": self.generic.schedule_reduce}
        return [A], [a], lambda route: (make(A), schedule[route]), ref(a)

    def sum(self):
        return self._reduce(lambda A: self.topi.sum(A, axis=(0, 2)), lambda a: a.sum((0, 2)))

    def max(self):
        return self._reduce(
            lambda A: self.topi.max(A, axis=-1, keepdims=True), lambda a: a.max(-1, keepdims=True)
        )

    def argmax(self):
        return self._reduce(lambda A: self.topi.argmax(A, axis=1), lambda a: a.argmax(1))

    def _softmax(self, make, ref):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7), low=-3, high=3)
        schedule = {"x86": self.x86.schedule_softmax, "generic": self.generic.schedule_softmax}
        return [A], [a], lambda route: (make(A), schedule[route]), ref(a)

    def softmax(self):
        return self._softmax(
            lambda A: self.topi.nn.softmax(A, axis=1), lambda a: self.ref.softmax_python(a, 1)
        )

    def log_softmax(self):
        return self._softmax(
            lambda A: self.topi.nn.log_softmax(A, axis=1),
            lambda a: self.ref.log_softmax_python(a, 1),
        )

    def dense(self):
        X, W, B = self._ph((5, 9), "X"), self._ph((7, 9), "W"), self._ph((7,), "bias")
        x, w, b = random((5, 9)), random((7, 9), seed=1), random((7,), seed=2)
        routes = {
            "x86": lambda: (self.x86.dense_nopack(X, W, B), self.x86.schedule_dense_nopack),
            "generic": lambda: (self.topi.nn.dense(X, W, B), self.generic.schedule_dense),
        }
        return [X, W, B], [x, w, b], lambda route: routes[route](), x @ w.T + b

    def dense_pack(self):
        X, W = self._ph((5, 9), "X"), self._ph((8, 9), "W")
        x, w = random((5, 9)), random((8, 9), seed=1)
        packed = w.reshape(2, 4, 9).transpose(0, 2, 1).copy()
        P = self._ph(packed.shape, "P")

        def route(name):
            if name == "x86":
                return self.x86.dense_pack(X, W), self.x86.schedule_dense_pack
            return self.topi.nn.dense_pack(X, P), self.generic.schedule_dense, [X, P], [x, packed]

        return [X, W], [x, w], route, x @ w.T

    def matmul(self):
        A, B = self._ph((9, 5), "A"), self._ph((9, 7), "B")
        a, b = random((9, 5)), random((9, 7), seed=1)
        make = lambda: self.topi.nn.matmul(A, B, transpose_a=True)  # noqa: E731
        return [A, B], [a, b], lambda route: (make(), self.generic.schedule_matmul), a.T @ b

    def batch_matmul(self):
        X, Y = self._ph((3, 5, 9), "X"), self._ph((3, 7, 9), "Y")
        x, y = random((3, 5, 9)), random((3, 7, 9), seed=1)
        routes = {
            "x86": lambda: (self.x86.batch_matmul(X, Y), self.x86.schedule_batch_matmul),
            "generic": lambda: (
                self.topi.nn.batch_matmul(X, Y),
                self.generic.schedule_batch_matmul,
            ),
        }
        return [X, Y], [x, y], lambda route: routes[route](), self.ref.batch_matmul(x, y)

    def _conv_inputs(self, weight_shape):
        D, W = self._ph((2, 3, 9, 11), "D"), self._ph(weight_shape, "W")
        return [D, W], [random((2, 3, 9, 11)), random(weight_shape, seed=1)]

    def conv2d_nchw(self):
        (D, W), (d, w) = inputs, arrays = self._conv_inputs((4, 3, 3, 3))
        routes = {
            "x86": lambda: (
                self.x86.conv2d_nchw(D, W, (2, 2), (1, 1), (1, 1), "float32"),
                self.x86.schedule_conv2d_nchw,
            ),
            "generic": lambda: (
                self.topi.nn.conv2d_nchw(D, W, (2, 2), (1, 1), (1, 1), "float32"),
                self.generic.schedule_conv2d_nchw,
            ),
        }
        expected = self.ref.conv2d_nchw_python(d, w, (2, 2), (1, 1))
        return inputs, arrays, lambda route: routes[route](), expected

    def depthwise_conv2d_nchw(self):
        # channel multiplier 1: TVM's x86 strategy picks TOPI's x86 module only then (its
        # compute asserts it) and the generic schedule otherwise
        (D, W), (d, w) = inputs, arrays = self._conv_inputs((3, 1, 3, 3))
        routes = {
            "x86": lambda: (
                self.x86.depthwise_conv2d_nchw(D, W, (1, 1), (1, 1), (1, 1), "float32"),
                self.x86.schedule_depthwise_conv2d_nchw,
            ),
            "generic": lambda: (
                self.topi.nn.depthwise_conv2d_nchw(D, W, (1, 1), (1, 1), (1, 1), "float32"),
                self.generic.schedule_depthwise_conv2d_nchw,
            ),
        }
        expected = np.concatenate(
            [
                self.ref.conv2d_nchw_python(d[:, c : c + 1], w[c].reshape(1, 1, 3, 3), 1, 1)
                for c in range(3)
            ],
            axis=1,
        )
        return inputs, arrays, lambda route: routes[route](), expected

    def conv2d_transpose_nchw(self):
        (D, W), (d, w) = inputs, arrays = self._conv_inputs((3, 4, 3, 3))
        routes = {
            "x86": lambda: (
                self.x86.conv2d_transpose_nchw(D, W, (2, 2), (1, 1), "float32", (1, 0)),
                self.x86.schedule_conv2d_transpose_nchw,
            ),
            "generic": lambda: (
                self.topi.nn.conv2d_transpose_nchw(D, W, (2, 2), (1, 1), "float32", (1, 0)),
                self.generic.schedule_conv2d_transpose_nchw,
            ),
        }
        expected = self.ref.conv2d_transpose_nchw_python(d, w, (2, 2), (1, 1), (1, 0))
        return inputs, arrays, lambda route: routes[route](), expected

    def _pool(self, kind):
        D = self._ph((2, 3, 9, 11), "D")
        d = random((2, 3, 9, 11))
        args = ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), kind, False, "NCHW", False)
        schedule = {
            "x86": lambda outs: self.x86.schedule_pool(outs, "NCHW"),
            "generic": lambda outs: self.generic.schedule_pool(outs, "NCHW"),
        }
        expected = self.ref.poolnd_python(
            d, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), kind, False, False, layout="NCHW"
        )
        return [D], [d], lambda route: (self.topi.nn.pool2d(D, *args), schedule[route]), expected

    def max_pool2d(self):
        return self._pool("max")

    def avg_pool2d(self):
        return self._pool("avg")

    def global_avg_pool(self):
        D = self._ph((2, 3, 9, 11), "D")
        d = random((2, 3, 9, 11))
        schedule = {
            "x86": self.x86.schedule_adaptive_pool,
            "generic": self.generic.schedule_adaptive_pool,
        }
        make = lambda: self.topi.nn.global_pool(D, "avg")  # noqa: E731
        return [D], [d], lambda route: (make(), schedule[route]), d.mean((2, 3), keepdims=True)

    def _injective(self, inputs, arrays, make, expected, x86=None):
        schedule = {
            "x86": x86 or self.x86.schedule_injective,
            "generic": self.generic.schedule_injective,
        }
        return inputs, arrays, lambda route: (make(), schedule[route]), expected

    def layout_transform(self):
        A = self._ph((2, 8, 5, 3), "A")
        a = random((2, 8, 5, 3))
        make = lambda: self.topi.layout_transform(A, "NCHW", "NCHW4c")  # noqa: E731
        expected = a.reshape(2, 2, 4, 5, 3).transpose(0, 1, 3, 4, 2)
        return self._injective([A], [a], make, expected)

    def concatenate(self):
        A, B = self._ph((3, 5, 7), "A"), self._ph((3, 2, 7), "B")
        a, b = random((3, 5, 7)), random((3, 2, 7), seed=1)

        def route(name):
            if name == "x86":
                return self.x86.concatenate([A, B], 1), self.x86.schedule_concatenate_cpu
            return self.topi.concatenate([A, B], 1), self.generic.schedule_injective

        return [A, B], [a, b], route, np.concatenate([a, b], 1)

    def split(self):
        A = self._ph((3, 6, 7), "A")
        a = random((3, 6, 7))
        make = lambda: self.topi.split(A, 3, axis=1)  # noqa: E731
        return self._injective([A], [a], make, np.split(a, 3, axis=1))

    def transpose(self):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7))
        make = lambda: self.topi.transpose(A, (2, 0, 1))  # noqa: E731
        return self._injective([A], [a], make, a.transpose(2, 0, 1))

    def take(self):
        A, I = self._ph((3, 5, 7), "A"), self._ph((2, 3), "I", "int32")
        a, ind = random((3, 5, 7)), np.array([[0, 4, -2], [9, 1, 3]], "int32")
        make = lambda: self.topi.take(A, I, axis=1)  # noqa: E731
        return self._injective([A, I], [a, ind], make, np.take(a, ind, 1, mode="clip"))

    def gather(self):
        A, G = self._ph((3, 5, 7), "A"), self._ph((3, 5, 2), "G", "int32")
        a, g = random((3, 5, 7)), random((3, 5, 2), "int32", 0, 7)
        make = lambda: self.topi.gather(A, 2, G)  # noqa: E731
        return self._injective([A, G], [a, g], make, self.ref.gather_python(a, 2, g))

    def resize2d(self):
        D = self._ph((2, 3, 5, 7), "D")
        d = random((2, 3, 5, 7))
        make = lambda: self.topi.image.resize2d(D, (0.0, 0.0, 0.0, 0.0), (8, 4))  # noqa: E731
        expected = self.ref.resize2d_python(d, (8 / 5, 4 / 7), "NCHW", "linear", "half_pixel")
        return self._injective([D], [d], make, expected)

    def pad(self):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7))
        make = lambda: self.topi.nn.pad(A, (1, 0, 2), (0, 2, 1), 0.5)  # noqa: E731
        expected = np.pad(a, ((1, 0), (0, 2), (2, 1)), constant_values=0.5)
        return self._injective([A], [a], make, expected)

    def lrn(self):
        L = self._ph((2, 7, 3, 5), "L")
        x = random((2, 7, 3, 5))
        make = lambda: self.topi.nn.lrn(L, 3, 1, 0.001, 0.75, 2.0)  # noqa: E731
        expected = self.ref.lrn_python(x, 3, 1, 2.0, 0.001, 0.75)
        return [L], [x], lambda route: (make(), self.generic.schedule_lrn), expected

    def layer_norm(self):
        L, G, B = self._ph((2, 5, 3, 7), "L"), self._ph((3, 7), "gamma"), self._ph((3, 7), "beta")
        x, g, b = random((2, 5, 3, 7)), random((3, 7), seed=1), random((3, 7), seed=2)
        make = lambda: self.topi.nn.layer_norm(L, G, B, (2, 3))  # noqa: E731
        expected = self.ref.layer_norm_python(x, g, b, (2, 3))
        schedule = {"x86": self.x86.schedule_injective, "generic": self.generic.schedule_injective}
        return [L, G, B], [x, g, b], lambda route: (make(), schedule[route]), expected


OPERATORS = [
    "exp", "relu", "add", "broadcast_to", "sum", "max", "argmax", "softmax", "log_softmax",
    "dense", "dense_pack", "matmul", "batch_matmul", "conv2d_nchw", "depthwise_conv2d_nchw",
    "conv2d_transpose_nchw", "max_pool2d", "avg_pool2d", "global_avg_pool", "layout_transform",
    "concatenate", "split", "transpose", "take", "gather", "resize2d", "pad", "lrn", "layer_norm",
]  # fmt: skip


def measure(tvm, operators: Operators, name: str, route: str) -> str:
    """The word "match" if TOPI's `route` for operator `name` matches numpy, else why not."""
    try:
        inputs, arrays, make, expected = getattr(operators, name)()
        with tvm.target.Target("llvm"):
            made = make(route)
            outs, schedule = made[:2]
            if len(made) == 4:
                inputs, arrays = made[2], made[3]
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            s = schedule(outs)
        kernel = tvm.build(s, list(inputs) + outs, "llvm")
        results = [poisoned(o) for o in outs]
        kernel(*arrays, *results)
        return compared(results, expected)
    except Exception as error:  # noqa: BLE001 - the reason is the measurement's result
        return reason(error)


def compared(results: list, expected) -> str:
    """"match" where `results` are `expected` (one array or a list) to 1e-4; AssertionError
    otherwise."""
    wanted = expected if isinstance(expected, list) else [expected]
    for got, want in zip(results, wanted):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return "match"


def reason(error: BaseException) -> str:
    """An error as one line: its class and the head of its message."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}"
