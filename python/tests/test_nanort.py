"""The nanort package against ONNX Runtime, and its errors (ctest -L python)."""
import os
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nanort

OPSET = [helper.make_opsetid("", 17)]


def mlp(path, rows=4, width=64, depth=3, seed=0):
    """A small MLP: depth x (MatMul, Add, Relu) on x f32[rows, width]."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(depth):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        b = rng.standard_normal(width).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        out = "y" if i == depth - 1 else f"h{i}"
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [out])]
        prev = out
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       [rows, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=OPSET, ir_version=8), path)
    return path


@pytest.fixture(scope="module")
def model_so(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlp")
    onnx_path = mlp(d / "mlp.onnx")
    return onnx_path, nanort.compile(onnx_path, target="x86-64-v2", out_dir=d / "out")


def test_matches_onnxruntime(model_so):
    onnx_path, so = model_so
    m = nanort.load(so)
    assert [(i.name, i.nanort_dtype, i.shape) for i in m.inputs] == [("x", "f32", (4, 64))]
    assert [(o.name, o.dtype, o.shape) for o in m.outputs] == [("y", np.float32, (4, 64))]
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    for seed in range(3):
        x = np.random.default_rng().standard_normal((4, 64)).astype(np.float32)
        y = m.run({"x": x})["y"]
        want = sess.run(None, {"x": x})[0]
        # Relative error 1e-5 of the output's scale (f32 products of 64 terms).
        assert np.max(np.abs(y - want)) <= 1e-5 * max(1.0, np.max(np.abs(want)))


def test_threads_give_the_same_bits(model_so):
    _, so = model_so
    x = np.random.default_rng().standard_normal((4, 64)).astype(np.float32)
    y1 = nanort.load(so, threads=1).run({"x": x})["y"]
    y2 = nanort.load(so, threads=2).run({"x": x})["y"]
    assert y1.tobytes() == y2.tobytes()


def test_inputs_are_read_in_place_not_converted(model_so):
    _, so = model_so
    m = nanort.load(so)
    x = np.zeros((4, 64), np.float64)
    with pytest.raises(nanort.NanortError) as e:
        m.run({"x": x})
    assert e.value.code_name == "SHAPE_MISMATCH" and "no conversion" in e.value.message
    strided = np.zeros((4, 128), np.float32)[:, ::2]
    with pytest.raises(nanort.NanortError) as e:
        m.run({"x": strided})
    assert e.value.code_name == "INVALID_ARGUMENT" and "C-contiguous" in e.value.message


def test_nanort_statuses_are_exceptions(model_so, tmp_path):
    _, so = model_so
    m = nanort.load(so)
    with pytest.raises(nanort.NanortError) as e:
        m.run({"x": np.zeros((4, 63), np.float32)})  # nanort's own shape check
    assert e.value.code == 6 and e.value.code_name == "SHAPE_MISMATCH"
    assert "x" in e.value.message
    with pytest.raises(nanort.NanortError) as e:
        m.run({"z": np.zeros((4, 64), np.float32)})
    assert e.value.code_name == "NOT_FOUND"
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF not really")
    with pytest.raises(nanort.NanortError) as e:
        nanort.load(bad)
    assert e.value.code_name in ("NOT_FOUND", "INVALID_PROGRAM", "INVALID_ARGUMENT")
    with pytest.raises(nanort.NanortError) as e:
        nanort.load(so, name="no_such_model")
    assert e.value.code_name == "NOT_FOUND" and "no_such_model" in e.value.message


def test_compile_errors_carry_nanocs_message(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(nanort.CompileError) as e:
        nanort.compile(bad, target="x86-64-v2", out_dir=tmp_path)
    assert e.value.returncode == 1 and "not a valid ONNX model" in str(e.value)


def test_the_gil_is_released_while_it_runs(tmp_path):
    # One run long enough to watch (about 17 GFLOP): while a thread is inside
    # run(), this thread wakes from a sleep and runs Python only if run()
    # released the GIL; holding it, this thread would wake after the run.
    so = nanort.compile(mlp(tmp_path / "big.onnx", rows=4096, width=512, depth=8),
                        target="x86-64-v2", out_dir=tmp_path / "out")
    m = nanort.load(so)
    x = np.ones((4096, 512), np.float32)
    start = time.perf_counter()
    m.run({"x": x})
    run_s = time.perf_counter() - start
    done = threading.Event()

    def work():
        m.run({"x": x})
        done.set()

    t = threading.Thread(target=work)
    start = time.perf_counter()
    t.start()
    time.sleep(run_s / 4)
    woke = time.perf_counter() - start
    still_running = not done.is_set()
    t.join()
    assert still_running and woke < 0.75 * run_s, (
        f"woke after {woke * 1e3:.0f} ms of a {run_s * 1e3:.0f} ms run, run finished: "
        f"{not still_running}")


# ---- CUDA arrays (a GPU model, through tests/cuda's fake libcuda.so.1) ----

FAKE_DRIVER = os.environ.get("NANORT_TEST_FAKE_CUDA_DRIVER")
needs_fake_driver = pytest.mark.skipif(
    not FAKE_DRIVER, reason="NANORT_TEST_FAKE_CUDA_DRIVER not set (ctest sets it)")


class FakeCudaArray:
    """Device memory from the fake driver's cuMemAlloc (host memory there, so
    .host views it), exposed as a CUDA array like CuPy's or PyTorch's."""

    def __init__(self, shape, dtype, readonly=False):
        import ctypes
        lib = ctypes.CDLL(FAKE_DRIVER)
        fn = ctypes.c_void_p()
        lib.cuGetProcAddress_v2(b"cuMemAlloc", ctypes.byref(fn), 12000, ctypes.c_ulonglong(0),
                                None)
        alloc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_ulonglong),
                                 ctypes.c_size_t)(fn.value)
        self.ptr = ctypes.c_ulonglong()
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        assert alloc(ctypes.byref(self.ptr), nbytes) == 0
        buf = (ctypes.c_char * nbytes).from_address(self.ptr.value)
        self.host = np.frombuffer(buf, dtype).reshape(shape)
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                         "data": (self.ptr.value, readonly), "version": 3,
                                         "strides": None}


class HostAsCuda:
    """A NumPy array claiming to be a CUDA array."""

    def __init__(self, a):
        self.keep = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str,
                                         "data": (a.ctypes.data, False), "version": 3}


def relu_model(path):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
    onnx.save(helper.make_model(g, opset_imports=OPSET, ir_version=8), path)
    return path


@needs_fake_driver
def test_cuda_arrays_are_copied_device_to_device(tmp_path, monkeypatch):
    log = tmp_path / "fake.log"
    monkeypatch.setenv("NANORT_CUDA_DRIVER", FAKE_DRIVER)
    monkeypatch.setenv("FAKE_CUDA_CC", "86")
    monkeypatch.setenv("FAKE_CUDA_LOG", str(log))
    so = nanort.compile(relu_model(tmp_path / "relu.onnx"), target="sm_80",
                        out_dir=tmp_path / "out", args=["--gpu-offload=all"])
    m = nanort.load(so)
    assert m.gpu == "sm_80 cubin on NVIDIA compute capability 8.6"
    assert m.inputs[0].cuda and m.outputs[0].cuda
    x, y = FakeCudaArray((4, 8), np.float32), FakeCudaArray((4, 8), np.float32)
    x.host[:] = np.arange(32, dtype=np.float32).reshape(4, 8)
    log.unlink(missing_ok=True)
    assert m.run({"x": x}, outputs={"y": y})["y"] is y
    # The fake computes nothing; what a run asked of it: x into the device
    # arena and y out of it, device to device, each checked first.
    calls = log.read_text().splitlines()
    assert calls.count("cuMemGetAddressRange") == 2, calls
    assert calls.count("cuMemcpyDtoDAsync 128") == 2, calls
    assert not [c for c in calls if c.startswith(("cuMemcpyHtoD", "cuMemcpyDtoH"))], calls
    # A host output beside a CUDA input.
    log.unlink()
    out = m.run({"x": x})["y"]
    assert isinstance(out, np.ndarray) and out.shape == (4, 8)
    assert log.read_text().splitlines().count("cuMemcpyDtoHAsync 128") == 1

    with pytest.raises(nanort.NanortError, match="is not CUDA device memory") as e:
        m.run({"x": HostAsCuda(np.zeros((4, 8), np.float32))})
    assert e.value.code_name == "INVALID_ARGUMENT"
    with pytest.raises(nanort.NanortError, match=r"has shape \[8, 4\]"):
        m.run({"x": FakeCudaArray((8, 4), np.float32)})
    with pytest.raises(nanort.NanortError, match="is <f8"):
        m.run({"x": FakeCudaArray((4, 8), np.float64)})
    with pytest.raises(nanort.NanortError, match="output 'y' is read-only"):
        m.run({"x": x}, outputs={"y": FakeCudaArray((4, 8), np.float32, readonly=True)})


def test_a_cpu_model_refuses_cuda_arrays(model_so):
    _, so = model_so
    m = nanort.load(so)
    assert m.gpu is None and not m.inputs[0].cuda
    with pytest.raises(nanort.NanortError, match="runs nothing on a GPU"):
        m.run({"x": HostAsCuda(np.zeros((4, 64), np.float32))})
