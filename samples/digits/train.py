#!/usr/bin/env python3
"""Trains the digits sample's two models and writes what digits_app reads.

Data: scikit-learn's 8x8 digits (1797 images), pixels scaled from 0..16 to
0..1, split 75/25 with a fixed seed.

Models, both exported to ONNX by hand with onnx.helper, batch 1 (the app
classifies one digit per call), output = class probabilities (Softmax):
  digits_mlp.onnx  sklearn MLPClassifier 64 -> 64 (Relu) -> 10:
                   Gemm + Relu + Gemm + Softmax
  digits_cnn.onnx  a small CNN trained here in plain numpy (Adam, manual
                   backprop): Conv 8x3x3 pad 1 + Relu + MaxPool 2x2 + Flatten
                   + Gemm 128 -> 10 + Softmax, on a 1x1x8x8 input

Files written to --out:
  digits_mlp.onnx, digits_cnn.onnx
  test_x.f32   held-out images, float32 [N, 64], row-major, scaled as in training
  test_y.u8    their labels, uint8 [N]
  ort_mlp.u8   ONNX Runtime's predicted class per held-out image, uint8 [N]
  ort_cnn.u8   the same for the CNN

Deterministic: fixed seeds and single-threaded BLAS give the same bytes on
every run on a given machine.
"""

import os

# Before numpy loads: one BLAS thread keeps sums in one order (reproducible
# bytes) and keeps the training on one core.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SEED = 20240611
OPSET = 17
IR_VERSION = 10  # the newest ONNX Runtime 1.31 reads
MIN_ACCURACY = 0.95


def load_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)


def save_model(graph, path):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="nanort-digits", ir_version=IR_VERSION)
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def init(name, a):
    return numpy_helper.from_array(np.ascontiguousarray(a, dtype=np.float32), name)


# ---- MLP: scikit-learn -----------------------------------------------------


def train_mlp(x, y):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    clf = MLPClassifier(hidden_layer_sizes=(64,), activation="relu", solver="adam",
                        alpha=1e-4, max_iter=300, random_state=SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x, y)
    return clf


def export_mlp(clf, path):
    w1, w2 = clf.coefs_  # [in, out] each: Gemm's B without transB
    b1, b2 = clf.intercepts_
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
        helper.make_node("Gemm", ["hr", "fc2.weight", "fc2.bias"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        [init("fc1.weight", w1), init("fc1.bias", b1), init("fc2.weight", w2),
         init("fc2.bias", b2)])
    save_model(graph, path)


# ---- CNN: plain numpy --------------------------------------------------------

FILTERS = 8


def im2col_3x3_pad1(x):
    """[N, 8, 8] -> [N, 64 positions, 9 taps], zero padding of 1."""
    n = x.shape[0]
    p = np.zeros((n, 10, 10), np.float32)
    p[:, 1:9, 1:9] = x
    cols = np.empty((n, 8, 8, 9), np.float32)
    for dy in range(3):
        for dx in range(3):
            cols[:, :, :, dy * 3 + dx] = p[:, dy:dy + 8, dx:dx + 8]
    return cols.reshape(n, 64, 9)


class Cnn:
    """Conv(8, 3x3, pad 1) -> Relu -> MaxPool 2x2 -> Flatten (NCHW order) -> Gemm 128->10."""

    def __init__(self, rng):
        self.wc = (rng.standard_normal((FILTERS, 9)) * np.sqrt(2.0 / 9)).astype(np.float32)
        self.bc = np.zeros(FILTERS, np.float32)
        self.wf = (rng.standard_normal((10, FILTERS * 16)) * np.sqrt(1.0 / (FILTERS * 16))
                   ).astype(np.float32)
        self.bf = np.zeros(10, np.float32)

    def params(self):
        return [self.wc, self.bc, self.wf, self.bf]

    def forward(self, x):
        n = x.shape[0]
        cols = im2col_3x3_pad1(x.reshape(n, 8, 8))
        conv = cols @ self.wc.T + self.bc  # [N, 64, F]
        conv = conv.transpose(0, 2, 1).reshape(n, FILTERS, 8, 8)
        act = np.maximum(conv, 0)
        win = act.reshape(n, FILTERS, 4, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
            n, FILTERS, 4, 4, 4)
        pooled = win.max(axis=-1)
        flat = pooled.reshape(n, FILTERS * 16)  # the order of ONNX Flatten on NCHW
        logits = flat @ self.wf.T + self.bf
        return logits, (cols, conv, win, pooled, flat)

    def grads(self, x, y):
        n = x.shape[0]
        logits, (cols, conv, win, pooled, flat) = self.forward(x)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.mean(np.log(p[np.arange(n), y] + 1e-12))
        dlogits = p
        dlogits[np.arange(n), y] -= 1
        dlogits /= n
        dwf = dlogits.T @ flat
        dbf = dlogits.sum(axis=0)
        dpooled = (dlogits @ self.wf).reshape(n, FILTERS, 4, 4)
        # The gradient goes to the first max of each window only.
        arg = win.argmax(axis=-1)
        dwin = np.zeros_like(win)
        np.put_along_axis(dwin, arg[..., None], dpooled[..., None], axis=-1)
        dact = dwin.reshape(n, FILTERS, 4, 4, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
            n, FILTERS, 8, 8)
        dconv = dact * (conv > 0)
        dconv = dconv.reshape(n, FILTERS, 64)  # [N, F, positions]
        dwc = np.einsum("nfp,npk->fk", dconv, cols)
        dbc = dconv.sum(axis=(0, 2))
        return loss, [dwc, dbc, dwf, dbf]

    def predict(self, x):
        return self.forward(x)[0].argmax(axis=1)


def train_cnn(x, y, epochs=40, batch=32, lr=3e-3):
    rng = np.random.default_rng(SEED)
    net = Cnn(rng)
    params = net.params()
    m = [np.zeros_like(q) for q in params]
    v = [np.zeros_like(q) for q in params]
    b1, b2, eps, wd = 0.9, 0.999, 1e-8, 1e-4
    step = 0
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            _, g = net.grads(x[idx], y[idx])
            step += 1
            for q, gq, mq, vq in zip(params, g, m, v):
                gq = gq + wd * q
                mq *= b1
                mq += (1 - b1) * gq
                vq *= b2
                vq += (1 - b2) * gq * gq
                mhat = mq / (1 - b1 ** step)
                vhat = vq / (1 - b2 ** step)
                q -= (lr * mhat / (np.sqrt(vhat) + eps)).astype(np.float32)
    return net


def export_cnn(net, path):
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        [init("conv.weight", net.wc.reshape(FILTERS, 1, 3, 3)), init("conv.bias", net.bc),
         init("fc.weight", net.wf), init("fc.bias", net.bf)])
    save_model(graph, path)


# ---- ONNX Runtime's classes ------------------------------------------------


def ort_predict(path, x, input_shape):
    """Class per image, one image per run (the model's batch is 1).

    Also returns the smallest gap between the top two probabilities: a tiny gap
    is where another correct implementation could pick the other class."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    classes = np.empty(len(x), np.uint8)
    min_gap = np.inf
    for i, img in enumerate(x):
        (probs,) = sess.run(None, {"x": img.reshape(input_shape)})
        top = np.sort(probs[0])[-2:]
        min_gap = min(min_gap, float(top[1] - top[0]))
        classes[i] = int(np.argmax(probs[0]))
    return classes, min_gap


def main(argv=None):
    p = argparse.ArgumentParser(description="Train the digits sample's models.")
    p.add_argument("--out", required=True, help="folder for the models and the held-out set")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    x_train, x_test, y_train, y_test = load_split()

    t0 = time.perf_counter()
    mlp = train_mlp(x_train, y_train)
    t_mlp = time.perf_counter() - t0
    t0 = time.perf_counter()
    cnn = train_cnn(x_train, y_train)
    t_cnn = time.perf_counter() - t0

    mlp_path = os.path.join(args.out, "digits_mlp.onnx")
    cnn_path = os.path.join(args.out, "digits_cnn.onnx")
    export_mlp(mlp, mlp_path)
    export_cnn(cnn, cnn_path)

    np.ascontiguousarray(x_test, np.float32).tofile(os.path.join(args.out, "test_x.f32"))
    y_test.astype(np.uint8).tofile(os.path.join(args.out, "test_y.u8"))

    status = 0
    for name, path, shape, own in (
        ("mlp", mlp_path, (1, 64), mlp.predict(x_test)),
        ("cnn", cnn_path, (1, 1, 8, 8), cnn.predict(x_test)),
    ):
        classes, gap = ort_predict(path, x_test, shape)
        classes.tofile(os.path.join(args.out, f"ort_{name}.u8"))
        acc = float(np.mean(classes == y_test))
        agree = int(np.sum(classes != own))
        t = t_mlp if name == "mlp" else t_cnn
        print(f"digits_{name}: held-out accuracy {acc:.4f} ({len(y_test)} images), "
              f"training {t:.1f} s, ONNX Runtime vs trainer: {agree} classes differ, "
              f"smallest top-2 probability gap {gap:.2e}")
        if acc < MIN_ACCURACY:
            print(f"train.py: error: digits_{name} accuracy {acc:.4f} < {MIN_ACCURACY}",
                  file=sys.stderr)
            status = 1
        if agree:
            print(f"train.py: error: the exported digits_{name} disagrees with the trained "
                  "model", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
